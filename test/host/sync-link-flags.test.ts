/**
 * Every link flag `ip link set` changes on a NIC is mirrored: multicast,
 * dynamic and trailers beside promisc, allmulticast and arp, each way
 * (set in the pod, then put back). Judged by the guest's own `ip -j link`
 * flags against the pod's (carrier's flags aside: the wire's, not the
 * link's) and by the independent complete comparison (test/podgen). What
 * no NIC can take (`carrier`, `protodown`: a veth and a virtio-net refuse
 * both) is not a flag of the model.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorPair } from "./complete-helpers";
import type { Netns } from "./helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

const CARRIER = new Set(["LOWER_UP", "NO-CARRIER", "M-DOWN"]);

async function flags(ns: Netns, dev: string): Promise<string[]> {
  const [l] = await ns.json<{ flags: string[] }[]>("link", "show", "dev", dev);
  return (l?.flags ?? []).filter((f) => !CARRIER.has(f)).sort();
}

describe("link flags", () => {
  it("multicast off, dynamic on, trailers off, promisc, allmulticast, arp off: mirrored, then put back", async () => {
    const p = await MirrorPair.create();
    cleanups.push(() => p.remove());
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    const set = (...words: string[]) => p.pod.ip("link", "set", "eth0", ...words);
    await set("multicast", "off", "dynamic", "on", "trailers", "off");
    await set("promisc", "on", "allmulticast", "on", "arp", "off");
    expect(await flags(p.pod, "eth0")).toEqual(
      ["BROADCAST", "DYNAMIC", "NOARP", "NOTRAILERS", "PROMISC", "ALLMULTI", "UP"].sort(),
    );
    let s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await flags(p.guest.ns, "eth0")).toEqual(await flags(p.pod, "eth0"));
    expect(await p.judge()).toEqual([]);
    await set("multicast", "on", "dynamic", "off", "trailers", "on");
    await set("promisc", "off", "allmulticast", "off", "arp", "on");
    s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await flags(p.guest.ns, "eth0")).toEqual(["BROADCAST", "MULTICAST", "UP"]);
    expect(await flags(p.guest.ns, "eth0")).toEqual(await flags(p.pod, "eth0"));
    expect(await p.judge()).toEqual([]);
  });
});
