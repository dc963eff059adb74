/**
 * The host story with the real CNI ptp plugin: a pod netns wired from a
 * private host netns, an agent in a guest netns whose veth has the pod's
 * MAC under another name. sync, then diff's model comparison says equal
 * and its verdict is an independent complete read's; the pod gains and
 * loses routes; sync again (by netns path); the same again. The guest is also
 * checked with an independent `ip -json route`. `--kata`: this is the Kata
 * sequence (UpdateInterface, UpdateRoutes), which must keep working; the
 * whole-state path (Apply) is test/host/sync-state.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectMirrorVerdict } from "./complete-helpers";
import { ctl, Guest, PtpPod, userRoutes } from "./helpers";

let pod: PtpPod;
let guest: Guest;

beforeAll(async () => {
  pod = await PtpPod.create();
  guest = await Guest.create(await pod.mac());
});
afterAll(async () => {
  await guest?.remove();
  await pod?.remove();
});

const podName = () => pod.pod.name;

describe("sync from a CNI ptp pod into an agent in a guest netns", () => {
  it("diff says different before the sync, equal after it", async () => {
    const before = await ctl(["--addr", guest.addr, "diff", "--kata", "--netns", podName()]);
    expect(before.code, before.stderr).toBe(1);
    expect(before.stdout).toContain("verdict: DIFFERENT");

    const sync = await ctl(["--addr", guest.addr, "sync", "--kata", "--netns", podName()]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain("interface eth0");
    expect(sync.stdout).toContain("routes: 3 sent");

    const diff = await ctl(["--addr", guest.addr, "diff", "--kata", "--netns", podName()]);
    await expectMirrorVerdict(
      diff,
      podName(),
      guest.ns.name,
      "verdict: EQUAL (1 interface, 3 routes)",
    );

    // A netns given as /proc/PID/ns/net (read through nsenter): the guest's
    // own namespace, read like a pod, agrees with what its agent reports.
    const self = await ctl([
      "--addr",
      guest.addr,
      "diff",
      "--kata",
      "--netns",
      `/proc/${guest.agent.child.pid}/ns/net`,
    ]);
    expect(self.code, self.stdout + self.stderr).toBe(0);

    // Independently of the agent: the guest's link and its table are the pod's.
    const [link] = await guest.ns.json<{ ifname: string; address: string; mtu: number }[]>(
      "link",
      "show",
      "eth0",
    );
    expect(link?.address).toBe(await pod.mac());
    const guestAddrs = await guest.ns.json<{ addr_info: { local: string; prefixlen: number }[] }[]>(
      "addr",
      "show",
      "eth0",
    );
    const have = (guestAddrs[0]?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`).sort();
    expect(have).toEqual((await pod.addresses()).sort());
    expect(await userRoutes(guest.ns)).toEqual(await userRoutes(pod.pod));
    expect(await userRoutes(guest.ns)).toEqual([
      {
        dst: "10.248.246.144/28",
        gateway: "10.248.246.145",
        dev: "eth0",
        prefsrc: "10.248.246.146",
      },
      { dst: "10.248.246.145", dev: "eth0", prefsrc: "10.248.246.146", scope: "link" },
      { dst: "default", gateway: "10.248.246.145", dev: "eth0" },
    ]);
  });
});

describe("sync from a CNI ptp pod into an agent in a guest netns: a second sync", () => {
  it("after the pod gains and loses routes, a second sync (netns by path) makes them equal again", async () => {
    // Extra: an IPv4 route, an IPv6 address and route. Lost: ptp's subnet route.
    await pod.pod.ip("route", "add", "192.0.2.0/24", "via", "10.248.246.145", "dev", "eth0");
    await pod.pod.ip("addr", "add", "2001:db8:5::2/64", "dev", "eth0", "nodad");
    await pod.pod.ip(
      "-6",
      "route",
      "add",
      "2001:db8:6::/64",
      "via",
      "2001:db8:5::1",
      "dev",
      "eth0",
    );
    await pod.pod.ip("route", "del", "10.248.246.144/28", "via", "10.248.246.145", "dev", "eth0");

    const stale = await ctl(["--addr", guest.addr, "diff", "--kata", "--netns", podName()]);
    expect(stale.code).toBe(1);
    expect(stale.stdout).toMatch(/^< +192\.0\.2\.0\/24 via 10\.248\.246\.145 dev eth0/m);
    expect(stale.stdout).toMatch(/^> +- {2,}10\.248\.246\.144\/28 via 10\.248\.246\.145/m);
    expect(stale.stdout).toMatch(/^< +2001:db8:5::2\/64/m);

    const path = `/run/netns/${podName()}`;
    const sync = await ctl(["--addr", guest.addr, "--json", "sync", "--kata", "--netns", path]);
    expect(sync.code, sync.stderr).toBe(0);
    const report = JSON.parse(sync.stdout) as { routesSent: number; interfaces: unknown[] };
    expect(report.routesSent).toBe(4);
    expect(report.interfaces).toHaveLength(1);

    const diff = await ctl(["--addr", guest.addr, "diff", "--kata", "--netns", path]);
    await expectMirrorVerdict(
      diff,
      podName(),
      guest.ns.name,
      "verdict: EQUAL (1 interface, 4 routes)",
    );

    const guestRoutes = await userRoutes(guest.ns);
    expect(guestRoutes).toEqual(await userRoutes(pod.pod));
    expect(guestRoutes).toContainEqual({
      dst: "2001:db8:6::/64",
      gateway: "2001:db8:5::1",
      dev: "eth0",
    });
    expect(guestRoutes).toContainEqual({
      dst: "192.0.2.0/24",
      gateway: "10.248.246.145",
      dev: "eth0",
    });
    expect(guestRoutes.some((r) => r.dst === "10.248.246.144/28" && r.gateway)).toBe(false);
  });
});
