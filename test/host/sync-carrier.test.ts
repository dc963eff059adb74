/**
 * What carrier alone explains: a pod's bridge without ports has no carrier,
 * the guest's NIC with its MAC has (a runtime other than Kata may give it
 * one). The kernel then gives only the guest what IPv6 makes once a link
 * has carrier (the multicast route ff00::/8 and the anycast routes of table
 * local, the local routes of addresses past duplicate address detection);
 * no agent can mirror that. sync does not count it (exit 0, each named as
 * carrier's), diff names it so and still compares everything else.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorPair, notMirrored } from "./complete-helpers";
import { randomMac } from "./helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe("differences carrier alone explains", () => {
  it("a bridge without ports in the pod, a NIC with carrier in the guest: synced, the rest compared", async () => {
    const p = await MirrorPair.create();
    cleanups.push(() => p.remove());
    const mac = randomMac();
    await p.guest.ns.veth("gst1", "p1", { mac, peerNs: p.wire });
    await p.wire.ip("link", "set", "p1", "up");
    const { pod } = p;
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await pod.ip("link", "add", "br0", "address", mac, "type", "bridge");
    await pod.ip("addr", "add", "10.8.0.1/24", "dev", "br0");
    await pod.ip("-6", "addr", "add", "fd00:8::1/64", "dev", "br0");
    await pod.ip("link", "set", "br0", "up");
    await pod.ip("route", "add", "10.96.0.0/16", "via", "10.8.0.9", "dev", "br0");
    const [br] = await pod.json<{ flags: string[] }[]>("link", "show", "dev", "br0");
    expect(br?.flags).toContain("NO-CARRIER");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(s.stdout).toMatch(/^ {2}differs by carrier alone/m);
    expect(s.stdout).toMatch(/multicast ff00::\/8 .*dev br0|ff00::\/8.*br0/);
    const d = await p.diff("--json");
    expect(d.code, d.stdout + d.stderr).toBe(0);
    expect(notMirrored(d)).toEqual([]);
    const carrier = (JSON.parse(d.stdout) as { carrier?: { what: string }[] }).carrier ?? [];
    expect(carrier.map((c) => c.what).join("\n")).toMatch(/ff00::\/8/);
    // Everything else on that link is still compared: a route the guest lacks is found.
    await pod.ip("route", "add", "10.95.0.0/16", "via", "10.8.0.9", "dev", "br0");
    const d2 = await p.diff();
    expect(d2.code).toBe(1);
    expect(d2.stdout).toMatch(/10\.95\.0\.0\/16/);
  });
});
