/**
 * Real pod shapes synced under their own generated policies: the CNI chain
 * ptp + tuning + sbr (rules and a table of their own, sysctls, MTU 1400)
 * and Calico's dual-stack shape (calico-pod.ts: /32 and /128 addresses, a
 * link route to 169.254.1.1, the IPv6 default via the peer's link-local
 * address). For each: `netagentctl policy --netns` writes the policy, a
 * guest agent runs under it, `sync` (Apply) and `diff` say EQUAL; then
 * the same policy refuses one more route the pod does not have (sbr's pod
 * has its routes in table 100 and none in main: there by its table).
 */
import { writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import type { Netns } from "../helpers/netns";
import { CalicoPod } from "./calico-pod";
import { ctl, Guest, tempDir } from "./helpers";
import { ChainPod, ptpTuningSbr } from "./state-helpers";

const dir = tempDir("netagent-policy-pods-");
afterAll(() => dir.remove());

/** Writes the pod's generated policy, starts a guest under it, syncs and diffs; answers the guest. */
async function mirrorUnderPolicy(pod: Netns, mac: string, name: string): Promise<Guest> {
  const out = await ctl(["policy", "--netns", pod.name]);
  expect(out.code, out.stderr).toBe(0);
  const file = dir.join(`${name}.json`);
  writeFileSync(file, out.stdout);
  const guest = await Guest.create(mac, "gst0", ["--policy", file]);
  const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
  expect(sync.code, sync.stdout + sync.stderr).toBe(0);
  const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
  expect(diff.stdout, diff.stderr).toContain("verdict: EQUAL");
  return guest;
}

/** A route the pod gains that its policy does not name: the next sync is refused, the guest kept. */
async function refusesNewRoute(pod: Netns, guest: Guest, via: string): Promise<void> {
  const before = await guest.ns.ip("-json", "route", "show", "table", "all");
  await pod.ip("route", "add", "198.51.100.0/24", "via", via, "dev", "eth0", "onlink");
  const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
  expect(sync.code).not.toBe(0);
  expect(sync.stdout + sync.stderr).toMatch(/policy rule routes\.(destinations|tables) refuses/);
  expect(await guest.ns.ip("-json", "route", "show", "table", "all")).toBe(before);
}

describe("real pods under their generated policies", () => {
  it("the chain ptp + tuning + sbr: rules, their table, sysctls", async () => {
    const pod = await ChainPod.create();
    let guest: Guest | undefined;
    try {
      await pod.attach(ptpTuningSbr());
      guest = await mirrorUnderPolicy(pod.pod, await pod.mac(), "chain");
      await refusesNewRoute(pod.pod, guest, "10.248.246.145");
    } finally {
      await guest?.remove();
      await pod.remove();
    }
  });

  it("Calico's dual-stack shape", async () => {
    const calico = await CalicoPod.create("02:00:00:0a:36:0b");
    let guest: Guest | undefined;
    try {
      guest = await mirrorUnderPolicy(calico.pod, calico.mac, "calico");
      await refusesNewRoute(calico.pod, guest, "169.254.1.1");
    } finally {
      await guest?.remove();
      await calico.remove();
    }
  });
});
