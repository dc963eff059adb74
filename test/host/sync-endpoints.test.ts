/**
 * Endpoints the way Kata makes them (docs/endpoints.md): a pod's tap with
 * a MAC becomes the VM's NIC with that MAC, so sync configures the guest's
 * NIC found by MAC and makes no device; a tun (which no VM NIC carries) is
 * still made in the guest. Two pod links of one MAC are refused, both
 * named with the MAC. Judged by the guest's own `ip -j link` (the links and
 * their MACs), the independent complete comparison (test/podgen) and diff.
 *
 * The pod's tap is held open by a stand-in for the VMM (a process that
 * attached to it, as QEMU does): then it has carrier, as in a Kata pod.
 */
import { describe, expect, it } from "vitest";
import { type Child, start } from "../helpers/process";
import { pairsPerTest } from "./complete-helpers";
import { type Netns, randomMac, waitFor } from "./helpers";

const { cleanups, pair } = pairsPerTest();

/** IFF_TAP | IFF_NO_PI, TUNSETIFF: attach to the pod's tap as a VMM does, then wait. */
const HOLD_TAP = `
import fcntl, os, signal, struct, sys
fd = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", sys.argv[1].encode(), 0x0002 | 0x1000))
print("attached", flush=True)
signal.pause()
`;

/** A process in `ns` holding the tap `name` open (carrier on); killed by its PID at cleanup. */
async function holdTap(ns: Netns, name: string): Promise<Child> {
  const child = start("ip", ["netns", "exec", ns.name, "python3", "-c", HOLD_TAP, name]);
  cleanups.push(() => child.kill());
  await waitFor(async () => child.stdout.includes("attached") || !child.running, {
    what: `a process attached to ${name}`,
  });
  if (!child.running) throw new Error(`could not attach to ${name}: ${child.stderr}`);
  return child;
}

interface LinkRead {
  ifname: string;
  address?: string;
  linkinfo?: { info_kind?: string };
}

const links = (ns: Netns) => ns.json<LinkRead[]>("link", "show");

describe("endpoints as Kata makes them", () => {
  it("a pod's tap with a MAC: the guest's NIC of that MAC is configured, nothing made; a tun is made", async () => {
    const p = await pair();
    const tapMac = randomMac();
    await p.guest.ns.veth("gst1", "p1", { mac: tapMac, peerNs: p.wire });
    await p.wire.ip("link", "set", "p1", "up");
    const { pod } = p;
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await pod.ip("tuntap", "add", "dev", "tap0", "mode", "tap");
    await pod.ip("link", "set", "tap0", "address", tapMac);
    await pod.ip("link", "set", "tap0", "mtu", "1400");
    await pod.ip("addr", "add", "10.8.0.1/24", "dev", "tap0");
    await pod.ip("link", "set", "tap0", "up");
    await pod.ip("route", "add", "10.96.0.0/16", "via", "10.8.0.9", "dev", "tap0");
    await pod.ip("tuntap", "add", "dev", "tun0", "mode", "tun");
    await pod.ip("addr", "add", "10.9.0.1/24", "dev", "tun0");
    await pod.ip("link", "set", "tun0", "up");
    await holdTap(pod, "tap0");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const guest = await links(p.guest.ns);
    // The tap is the NIC the guest already had (a veth here, virtio-net in a VM), renamed.
    expect(guest.map((l) => [l.ifname, l.linkinfo?.info_kind])).toEqual([
      ["lo", undefined],
      ["eth0", "veth"],
      ["tap0", "veth"],
      ["tun0", "tun"],
    ]);
    expect(guest.find((l) => l.ifname === "tap0")?.address).toBe(tapMac);
    const macs = guest.map((l) => l.address).filter((m) => m && m !== "00:00:00:00:00:00");
    expect(new Set(macs).size).toBe(macs.length);
    expect(await p.judge()).toEqual([]);
    const d = await p.diff();
    expect(d.code, d.stdout + d.stderr).toBe(0);
    expect(d.stdout).toMatch(/^verdict: EQUAL/m);
  });

  it("two pod links of one MAC: both listed as not mirrored naming the MAC; the guest keeps one link of it", async () => {
    const p = await pair();
    const mac = randomMac();
    await p.guest.ns.veth("gst1", "p1", { mac, peerNs: p.wire });
    await p.wire.ip("link", "set", "p1", "up");
    const { pod } = p;
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await pod.ip("tuntap", "add", "dev", "tap0", "mode", "tap");
    await pod.ip("link", "set", "tap0", "address", mac);
    await pod.ip("addr", "add", "10.8.0.1/24", "dev", "tap0");
    await pod.ip("link", "add", "br0", "address", mac, "type", "bridge");
    await pod.ip("addr", "add", "10.7.0.1/24", "dev", "br0");
    await pod.ip("link", "set", "tap0", "up");
    await pod.ip("link", "set", "br0", "up");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(4);
    for (const [name, other] of [
      ["tap0", "br0"],
      ["br0", "tap0"],
    ])
      expect(s.stdout).toContain(`interface ${name}: shares MAC ${mac} with ${other}`);
    const guest = await links(p.guest.ns);
    expect(guest.filter((l) => l.address === mac).map((l) => l.ifname)).toEqual(["gst1"]);
    expect(guest.map((l) => l.ifname)).toEqual(["lo", "eth0", "gst1"]);
  });

  it("a pod link no runtime makes a NIC of (no addresses), the guest without its MAC: listed, not waited for", async () => {
    const p = await pair();
    const { pod } = p;
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    // Down: no address at all, not even a link-local (an up link would get one, and count as configured).
    await pod.veth("eth1", "vidle", { mac: randomMac(), peerNs: p.host, up: false });
    const started = performance.now();
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(4);
    // Not the hot-plug wait (20 attempts, about 30 s) for a NIC that never comes.
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(s.stdout).toMatch(
      /^ {4}interface eth1: no addresses \(a runtime makes no NIC of an unconfigured link\) and the guest has no NIC with its MAC /m,
    );
    expect((await links(p.guest.ns)).map((l) => l.ifname)).toEqual(["lo", "eth0"]);
  });
});
