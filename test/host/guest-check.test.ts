/**
 * follow's complete check (src/host/follow/guest-check.ts) on a real pod and
 * guest: a guest address still in duplicate address detection, where the
 * pod's is usable, is waited for after a sync (the comparison's own reads
 * show it, so the check waits and compares again) and the verdict is
 * equal once it is usable; before the first sync nothing is waited for and
 * the address counts. Detection is made to outlast the settled check's own
 * re-reads, so that only the wait can see it end. The guest's address is read with `ip -j` separately,
 * before and after, to show what the check met.
 */
import { describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { checkGuest } from "../../src/host/follow/guest-check";
import { readPodBoth, readPodRequests } from "../../src/host/pod/pod-requests";
import { readPodState } from "../../src/host/sync/sync-once";
import { dial } from "../../src/transport/dial";
import { run } from "../helpers/process";
import { pairsPerTest } from "./complete-helpers";
import { type Netns, waitFor } from "./helpers";

const { pair, cleanups } = pairsPerTest();

const ADDRESS = "fd00:7::2";

/** ADDRESS on `dev` is tentative now (an independent read). */
async function tentativeIn(ns: Netns, dev: string): Promise<boolean> {
  const links = await ns.json<{ addr_info?: { local: string; tentative?: boolean }[] }[]>(
    "-6",
    "addr",
    "show",
    "dev",
    dev,
  );
  const info = links.flatMap((l) => l.addr_info ?? []).find((a) => a.local === ADDRESS);
  if (info === undefined) throw new Error(`${ADDRESS} is not on ${dev}`);
  return info.tentative === true;
}

/** A synced pair whose guest then has the pod's usable ADDRESS again, in detection. */
async function guestInDetection() {
  const p = await pair();
  await p.pod.ip("-6", "addr", "add", `${ADDRESS}/64`, "dev", "eth0");
  await waitFor(async () => !(await tentativeIn(p.pod, "eth0")), {
    what: "the pod's address past detection",
  });
  const s = await p.sync();
  expect(s.code, s.stdout + s.stderr).toBe(0);
  // From now on detection lasts 2.9 s (one probe, its retransmit time), set on both sides
  // alike: longer than a settled check's re-reads (VERIFY_READS, a second apart) span,
  // shorter than the wait's limit, so only a wait sees the address usable. Set after the
  // sync, whose own wait for the guest's addresses has the same limit.
  for (const ns of [p.pod, p.guest.ns]) {
    const set = await run("ip", [
      "netns",
      "exec",
      ns.name,
      "sysctl",
      "-qw",
      "net.ipv6.neigh.eth0.retrans_time_ms=2900",
    ]);
    expect(set.code, set.stderr).toBe(0);
  }
  await p.guest.ns.ip("-6", "addr", "del", `${ADDRESS}/64`, "dev", "eth0");
  await p.guest.ns.ip("-6", "addr", "add", `${ADDRESS}/64`, "dev", "eth0");
  expect(await tentativeIn(p.guest.ns, "eth0")).toBe(true);
  const netns = `/run/netns/${p.pod.name}`;
  const pod = await readPodState(
    { netns, read: () => readPodRequests(netns), readBoth: () => readPodBoth(netns) },
    { full: true },
  );
  const client = new AgentClient(await dial(p.guest.addr, 10_000));
  cleanups.push(async () => client.close());
  const check = (settle: boolean) =>
    checkGuest(client, pod, { netns, label: "the pod", timeoutMs: 10_000, settle });
  return { p, check };
}

describe("follow's complete check and addresses in detection", () => {
  it("after a sync: waits while the guest's address is in detection, then equal", async () => {
    const { p, check: checkNow } = await guestInDetection();
    const check = await checkNow(true);
    expect(check).toEqual({ differences: [] });
    expect(await tentativeIn(p.guest.ns, "eth0")).toBe(false);
  });

  it("before the first sync: no wait, the tentative address is a difference", async () => {
    const { p, check: checkNow } = await guestInDetection();
    const check = await checkNow(false);
    expect("differences" in check && check.differences.join("\n")).toContain(ADDRESS);
    expect(await tentativeIn(p.guest.ns, "eth0")).toBe(true);
  });
});
