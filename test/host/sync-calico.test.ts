/**
 * The Calico dual-stack pod shape (no CNI plugin needed to make it): eth0
 * with 10.65.0.11/32 and fd00:10:65::11/128, its peer in a private host
 * netns with Calico's MAC ee:ee:ee:ee:ee:ee, IPv4 default via 169.254.1.1
 * (a link route) and IPv6 default via the peer's link-local address. After
 * sync, diff must say EQUAL: the guest's kernel route for the /128 is the
 * kernel's, not a difference.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";
import { ctl, Guest } from "./helpers";

const CALICO_MAC = "ee:ee:ee:ee:ee:ee";
const CALICO_LL = "fe80::ecee:eeff:feee:eeee";
const POD_MAC = "02:00:00:0a:41:0b";

describe("sync and diff of a Calico dual-stack pod", () => {
  let host: Netns;
  let pod: Netns;
  let guest: Guest;

  beforeAll(async () => {
    host = await Netns.create("nh10h");
    pod = await Netns.create("nh10p");
    await host.ip(
      "link",
      "add",
      "cali0",
      "address",
      CALICO_MAC,
      "type",
      "veth",
      "peer",
      "name",
      "eth0",
      "netns",
      pod.name,
    );
    await pod.ip("link", "set", "eth0", "address", POD_MAC);
    await host.ip("link", "set", "cali0", "up");
    await pod.ip("link", "set", "eth0", "up");
    await pod.ip("addr", "add", "10.65.0.11/32", "dev", "eth0");
    await pod.ip("addr", "add", "fd00:10:65::11/128", "dev", "eth0", "nodad");
    await pod.ip("route", "add", "169.254.1.1", "dev", "eth0", "scope", "link");
    await pod.ip("route", "add", "default", "via", "169.254.1.1", "dev", "eth0");
    await pod.ip("-6", "route", "add", "default", "via", CALICO_LL, "dev", "eth0");
    // sync copies the pod's own link-local address, which comes with carrier.
    await waitFor(
      async () => {
        const [l] = await pod.json<{ addr_info: { local: string }[] }[]>("addr", "show", "eth0");
        return l?.addr_info.some((a) => a.local.startsWith("fe80:"));
      },
      { what: "the pod's IPv6 link-local address" },
    );
    guest = await Guest.create(POD_MAC);
  });
  afterAll(async () => {
    await guest?.remove();
    await pod?.remove();
    await host?.remove();
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
