/**
 * The Calico dual-stack pod shape (calico-pod.ts: eth0 with 10.65.0.11/32
 * and fd00:10:65::11/128, IPv4 default via 169.254.1.1 as a link route,
 * IPv6 default via the Calico peer's link-local address). After
 * sync, diff must say EQUAL: the guest's kernel route for the /128 is the
 * kernel's, not a difference.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Netns } from "../helpers/netns";
import { CalicoPod } from "./calico-pod";
import { ctl, Guest } from "./helpers";

const POD_MAC = "02:00:00:0a:41:0b";

describe("sync and diff of a Calico dual-stack pod", () => {
  let calico: CalicoPod;
  let pod: Netns;
  let guest: Guest;

  beforeAll(async () => {
    calico = await CalicoPod.create(POD_MAC);
    pod = calico.pod;
    guest = await Guest.create(POD_MAC);
  });
  afterAll(async () => {
    await guest?.remove();
    await calico?.remove();
  });

  it("diff says EQUAL after sync (the /128's kernel route is not guest-only)", async () => {
    const sync = await ctl(["--addr", guest.addr, "sync", "--kata", "--netns", pod.name]);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    // Independently: the guest's kernel made the /128 route itself.
    const v6 = await guest.ns.json<{ dst: string; protocol: string }[]>("-6", "route", "show");
    expect(v6).toContainEqual(
      expect.objectContaining({ dst: "fd00:10:65::11", protocol: "kernel" }),
    );
    const diff = await ctl(["--addr", guest.addr, "diff", "--kata", "--netns", pod.name]);
    expect(diff.stdout).not.toMatch(/fd00:10:65::11\/128 dev eth0/);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
    expect(diff.stdout).toContain("verdict: EQUAL");
  });

  it("the same pod through Apply (netagent.v1): the whole-state diff says EQUAL too", async () => {
    const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    expect(sync.stdout).toContain("with one Apply");
    const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
    expect(diff.stdout).toMatch(/^= +fd00:10:65::11\/128 dev eth0 metric 256 proto kernel/m);
  });
});
