/**
 * Sync's vocabulary, neighbours: a pod's proxy entries (`ip neigh add proxy`,
 * both families, one with `router`), an `extern_learn` entry and permanent
 * ones with and without `router`, mirrored by `netagentctl sync`, and a
 * second sync after the pod changed them. Judged by test/podgen's
 * independent complete reads and by plain `ip -n NS -j neigh` reads.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorPair } from "./complete-helpers";

let pair: MirrorPair | undefined;
afterEach(async () => {
  await pair?.remove();
  pair = undefined;
});

type Json = Record<string, unknown>;
type Ns = { json<T>(...a: string[]): Promise<T> };

/** Configured entries (proxy, permanent), sorted: what the pod and the guest must both hold. */
async function entries(ns: Ns): Promise<string[]> {
  const text = (n: Json) => JSON.stringify(Object.entries(n).sort(([a], [b]) => (a < b ? -1 : 1)));
  const all = [
    ...(await ns.json<Json[]>("neigh", "show", "nud", "permanent")),
    ...(await ns.json<Json[]>("neigh", "show", "proxy")),
  ];
  return all.map(text).sort();
}

async function expectMirrored(p: MirrorPair): Promise<void> {
  expect((await p.judge()).map((d) => d.text)).toEqual([]);
  const pod = await entries(p.pod);
  expect(pod.length).toBeGreaterThan(0);
  expect(await entries(p.guest.ns)).toEqual(pod);
  const d = await p.diff();
  expect(d.code, d.stdout + d.stderr).toBe(0);
}

describe("sync carries neighbours: proxy, extern_learn, router", () => {
  it("proxy entries of both families, extern_learn, router; then changed and removed", async () => {
    pair = await MirrorPair.create();
    const ip = (...a: string[]) => pair?.pod.ip(...a);
    await ip("addr", "add", "10.9.0.1/24", "dev", "eth0");
    await ip("-6", "addr", "add", "fd00:9::1/64", "nodad", "dev", "eth0");
    await ip("neigh", "add", "proxy", "10.9.0.50", "dev", "eth0");
    await ip("-6", "neigh", "add", "proxy", "fd00:9::50", "dev", "eth0");
    await ip("-6", "neigh", "add", "proxy", "fd00:9::51", "dev", "eth0", "router");
    await ip(
      "neigh",
      "add",
      "10.9.0.7",
      "lladdr",
      "02:00:00:00:00:07",
      "dev",
      "eth0",
      "extern_learn",
    );
    await ip(
      "neigh",
      "add",
      "10.9.0.8",
      "lladdr",
      "02:00:00:00:00:08",
      "dev",
      "eth0",
      "nud",
      "permanent",
      "router",
    );
    await ip(
      "-6",
      "neigh",
      "add",
      "fd00:9::9",
      "lladdr",
      "02:00:00:00:00:09",
      "dev",
      "eth0",
      "nud",
      "permanent",
    );
    const s = await pair.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    await expectMirrored(pair);

    await ip("neigh", "del", "proxy", "10.9.0.50", "dev", "eth0");
    await ip("neigh", "add", "proxy", "10.9.0.52", "dev", "eth0");
    await ip(
      "neigh",
      "replace",
      "10.9.0.7",
      "lladdr",
      "02:00:00:00:00:07",
      "dev",
      "eth0",
      "nud",
      "permanent",
    );
    await ip(
      "neigh",
      "replace",
      "10.9.0.8",
      "lladdr",
      "02:00:00:00:00:08",
      "dev",
      "eth0",
      "nud",
      "permanent",
      "extern_learn",
    );
    const again = await pair.sync();
    expect(again.code, again.stdout + again.stderr).toBe(0);
    await expectMirrored(pair);
  });
});
