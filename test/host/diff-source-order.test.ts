/**
 * The source a lookup picks through a link with no IPv4 address of its own
 * (`route get X oif net1`) is the first other link's, in the order links
 * were made: the guest's NICs here are made in the other order than the
 * pod's (as a hypervisor may), so those lookups differ in the source alone.
 * diff names the link whose lookups can differ and lists such lookups
 * apart, not counted; every other lookup and the rest are still compared.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorPair } from "./complete-helpers";
import { randomMac } from "./helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

describe("lookups whose source follows the order of links", () => {
  it("net1 without IPv4: named by diff; a lookup through it differing in the source alone is not counted", async () => {
    const p = await MirrorPair.create();
    cleanups.push(() => p.remove());
    const [net1, eth2, eth3] = [randomMac(), randomMac(), randomMac()];
    // Pod: eth0 (no IPv4), net1 (no IPv4), eth2, eth3: the first with IPv4 is eth2.
    // Guest: eth0's NIC, then eth3's, eth2's, net1's: the first with IPv4 is eth3's.
    await p.guest.ns.veth("gst3", "p3", { mac: eth3, peerNs: p.wire });
    await p.guest.ns.veth("gst2", "p2", { mac: eth2, peerNs: p.wire });
    await p.guest.ns.veth("gst1", "p1", { mac: net1, peerNs: p.wire });
    const { pod } = p;
    await pod.veth("net1", "vn1", { mac: net1, peerNs: p.host });
    await pod.veth("eth2", "ve2", { mac: eth2, peerNs: p.host });
    await pod.veth("eth3", "ve3", { mac: eth3, peerNs: p.host });
    await pod.ip("addr", "add", "10.2.0.2/24", "dev", "eth2");
    await pod.ip("addr", "add", "10.3.0.2/24", "dev", "eth3");
    await pod.ip("route", "add", "10.99.0.0/16", "dev", "net1", "table", "100");
    await pod.ip("rule", "add", "priority", "100", "oif", "net1", "lookup", "100");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const d = await p.diff("--probes", "200");
    expect(d.stdout).toMatch(/^lookups that can differ in their source/m);
    expect(d.stdout).toContain("lookups through net1 (no IPv4 source of its own)");
    // The probes through net1 differ in the source alone: listed, not counted.
    expect(d.stdout).toMatch(/^~ {2}route get \S+ oif net1.*src 10\.2\.0\.2 .*src 10\.3\.0\.2/m);
    expect(d.code, d.stdout + d.stderr).toBe(0);
    expect(d.stdout).toMatch(/^verdict: EQUAL/m);
  });
});
