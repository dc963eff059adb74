/**
 * Sync's vocabulary, links and addresses: what a pod's NIC and its addresses
 * hold beyond name, MTU and address/prefix (the link's txqueuelen, promisc,
 * allmulticast, group, alias; an address's broadcast, label, scope,
 * noprefixroute, metric, peer, lifetimes with deprecated staying
 * deprecated, home, mngtmpaddr, and the pod's order per link), mirrored by
 * `netagentctl sync`. Judged by test/podgen's independent complete reads of
 * both namespaces and by plain `ip -n NS -d -j` reads, never by the agent.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorPair } from "./complete-helpers";

let pair: MirrorPair | undefined;
afterEach(async () => {
  await pair?.remove();
  pair = undefined;
});

type Json = Record<string, unknown>;

async function link(ns: { json<T>(...a: string[]): Promise<T> }, dev: string): Promise<Json> {
  const [l] = await ns.json<Json[]>("addr", "show", "dev", dev);
  return l ?? {};
}

const infos = (l: Json) => (l.addr_info as Json[] | undefined) ?? [];

/** An address entry as the test compares it: no remaining seconds, no DAD state, no guest nodad. */
function shape(a: Json): Json {
  const out: Json = { ...a };
  for (const k of ["valid_life_time", "preferred_life_time", "tentative", "nodad", "label"])
    delete out[k];
  const life = (v: unknown) => (v === 4294967295 ? "forever" : v === 0 ? "0" : "finite");
  out.valid = life(a.valid_life_time);
  out.preferred = life(a.preferred_life_time);
  // the label the kernel gives by default is the link's name, which differs (eth0 / gst0 before the rename)
  if (typeof a.label === "string" && !/^(eth0|gst0)$/.test(a.label)) out.label = a.label;
  return out;
}

async function expectMirrored(p: MirrorPair): Promise<void> {
  const judged = await p.judge();
  expect(judged.map((d) => d.text)).toEqual([]);
  const pod = await link(p.pod, "eth0");
  const guest = await link(p.guest.ns, "eth0");
  for (const k of ["txqlen", "group", "ifalias", "promiscuity", "allmulti"]) {
    expect(guest[k], k).toEqual(pod[k]);
  }
  const flags = (l: Json) => (l.flags as string[]).filter((f) => f !== "LOWER_UP").sort();
  expect(flags(guest)).toEqual(flags(pod));
  const kernelLl = (a: Json) => /^fe80::.*ff:fe/.test(String(a.local));
  const list = (l: Json) =>
    infos(l)
      .filter((a) => !kernelLl(a))
      .map(shape);
  expect(list(guest)).toEqual(list(pod));
  const d = await p.diff();
  expect(d.code, d.stdout + d.stderr).toBe(0);
  expect(d.stdout).toMatch(/^verdict: EQUAL/m);
}

describe("sync carries link and address attributes", () => {
  it("txqueuelen, promisc, allmulticast, group, alias; broadcast, label, scope, noprefixroute, metric, peer, lifetimes, deprecated, home, mngtmpaddr, IPv6 order", async () => {
    pair = await MirrorPair.create();
    const ip = (...a: string[]) => pair?.pod.ip(...a);
    await ip("link", "set", "eth0", "txqueuelen", "0", "promisc", "on", "allmulticast", "on");
    await ip("link", "set", "eth0", "group", "7", "alias", "pod uplink");
    await ip(
      "addr",
      "add",
      "10.1.0.2/24",
      "broadcast",
      "10.1.0.255",
      "label",
      "eth0:3",
      "metric",
      "50",
      "dev",
      "eth0",
    );
    await ip("addr", "add", "10.2.0.2/24", "noprefixroute", "dev", "eth0");
    await ip("addr", "add", "10.3.0.1", "peer", "10.3.0.9/32", "dev", "eth0");
    await ip("addr", "add", "10.4.0.2/24", "scope", "link", "dev", "eth0");
    await ip(
      "addr",
      "add",
      "10.5.0.2/24",
      "valid_lft",
      "3000",
      "preferred_lft",
      "1000",
      "dev",
      "eth0",
    );
    await ip("-6", "addr", "add", "fd00:1::2/64", "preferred_lft", "0", "nodad", "dev", "eth0");
    await ip("-6", "addr", "add", "fd00:2::2/64", "home", "nodad", "dev", "eth0");
    await ip("-6", "addr", "add", "fd00:3::2/64", "mngtmpaddr", "nodad", "dev", "eth0");
    await ip(
      "-6",
      "addr",
      "add",
      "fd00:4::2/64",
      "metric",
      "300",
      "noprefixroute",
      "nodad",
      "dev",
      "eth0",
    );
    await ip("-6", "addr", "add", "fd00:5::2", "peer", "fd00:5::1/128", "nodad", "dev", "eth0");
    await ip(
      "-6",
      "addr",
      "add",
      "fd00:6::2/64",
      "valid_lft",
      "4000",
      "preferred_lft",
      "2000",
      "nodad",
      "dev",
      "eth0",
    );
    const s = await pair.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    await expectMirrored(pair);
    // the pod lists its IPv6 addresses newest first, and so does the guest
    const v6 = (l: Json) =>
      infos(l)
        .filter((a) => a.family === "inet6" && String(a.local).startsWith("fd00:"))
        .map((a) => a.local);
    expect(v6(await link(pair.guest.ns, "eth0"))).toEqual([
      "fd00:6::2",
      "fd00:5::2",
      "fd00:4::2",
      "fd00:3::2",
      "fd00:2::2",
      "fd00:1::2",
    ]);
  });
});

describe("sync carries link and address attributes: a second sync, a noprefixroute primary", () => {
  it("a second sync changes attributes in place or makes the address again: broadcast, metric, deprecated, alias, txqueuelen", async () => {
    pair = await MirrorPair.create();
    const ip = (...a: string[]) => pair?.pod.ip(...a);
    await ip("addr", "add", "10.1.0.2/24", "broadcast", "10.1.0.255", "dev", "eth0");
    await ip("-6", "addr", "add", "fd00:1::2/64", "nodad", "dev", "eth0");
    await ip("-6", "addr", "add", "fd00:2::2/64", "metric", "10", "nodad", "dev", "eth0");
    await ip("link", "set", "eth0", "alias", "one");
    expect((await pair.sync()).code).toBe(0);
    await expectMirrored(pair);
    await ip("addr", "del", "10.1.0.2/24", "dev", "eth0");
    await ip("addr", "add", "10.1.0.2/24", "broadcast", "10.1.0.254", "dev", "eth0");
    await ip("-6", "addr", "change", "fd00:1::2/64", "preferred_lft", "0", "dev", "eth0");
    await ip("-6", "addr", "change", "fd00:2::2/64", "metric", "20", "nodad", "dev", "eth0");
    await ip("link", "set", "eth0", "alias", "", "txqueuelen", "5000");
    const s = await pair.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    await expectMirrored(pair);
  });

  it("a noprefixroute primary and its secondary: the secondary has no prefix route either (podgen seed 4)", async () => {
    pair = await MirrorPair.create();
    const ip = (...a: string[]) => pair?.pod.ip(...a);
    await ip("addr", "add", "10.176.94.4/28", "noprefixroute", "dev", "eth0");
    await ip("addr", "add", "10.176.94.9/28", "dev", "eth0");
    const s = await pair.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    await expectMirrored(pair);
  });
});
