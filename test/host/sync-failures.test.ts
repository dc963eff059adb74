/**
 * Syncs at the edges of the kernel's rules, each in a pod of real namespaces: an IPv6 rule
 * with a prefix (iproute2 puts a rule without `-6` in IPv4 whatever its
 * prefix says), a tun device (no MAC: the guest makes its own, found by
 * name), and
 * an MTU below 1280 (the kernel takes IPv6 off the link, the fe80::/64
 * route with it, so a plan that deletes that route itself fails). Results
 * are checked by independent `ip -j` reads of pod and guest.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Netns } from "../helpers/netns";
import { ctl, Guest, waitFor } from "./helpers";
import { rules } from "./state-helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** A pod with eth0 (its peer in a host namespace of its own) and a guest with eth0's twin. */
async function setUp(): Promise<{ pod: Netns; guest: Guest }> {
  const host = await Netns.create("n22h");
  cleanups.push(() => host.remove());
  const pod = await Netns.create("n22p");
  cleanups.push(() => pod.remove());
  await pod.veth("eth0", "peer0", { peerNs: host });
  const [link] = await pod.json<{ address: string }[]>("link", "show", "eth0");
  const guest = await Guest.create(link?.address);
  cleanups.push(() => guest.remove());
  return { pod, guest };
}

const sync = (g: Guest, pod: Netns, ...extra: string[]) =>
  ctl(["--addr", g.addr, "sync", ...extra, "--netns", pod.name]);

/** Addresses of one link as `ip -j addr` lists them: address/prefix, in order. */
async function addrs(ns: Netns, dev: string): Promise<string[]> {
  const [l] = await ns.json<{ addr_info: { local: string; prefixlen: number }[] }[]>(
    "addr",
    "show",
    "dev",
    dev,
  );
  return (l?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`);
}

describe("sync at the kernel's edges: IPv6 rules with a prefix, an MTU below 1280, a tun device", () => {
  it("IPv6 rules with a prefix go to the IPv6 batch and are mirrored", async () => {
    const { pod, guest } = await setUp();
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await pod.ip(
      "-6",
      "rule",
      "add",
      "priority",
      "9613",
      "from",
      "fd90:6b33:220a:4300::/56",
      "blackhole",
    );
    await pod.ip("-6", "rule", "add", "priority", "9614", "to", "fd90::/16", "lookup", "100");
    await pod.ip("-6", "rule", "add", "priority", "9615", "lookup", "101");
    await pod.ip("rule", "add", "priority", "9616", "from", "10.1.0.0/24", "lookup", "100");
    const s = await sync(guest, pod);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await rules(guest.ns)).toEqual(await rules(pod));
  });

  it("an MTU below 1280 (IPv6 off the link) does not race the kernel's own removal of fe80::/64", async () => {
    const { pod, guest } = await setUp();
    await pod.ip("link", "set", "eth0", "mtu", "1200");
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    // The guest's twin has IPv6 (and its fe80::/64 route) when the plan is made.
    await waitFor(
      async () =>
        (await guest.ns.json<{ dst: string }[]>("-6", "route", "show", "dev", "gst0")).some(
          (r) => r.dst === "fe80::/64",
        ),
      { what: "the guest's fe80::/64 route" },
    );
    const s = await sync(guest, pod);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const [link] = await guest.ns.json<{ mtu: number }[]>("link", "show", "eth0");
    expect(link?.mtu).toBe(1200);
    expect(await addrs(guest.ns, "eth0")).toEqual(await addrs(pod, "eth0"));
    const v6 = (ns: Netns) =>
      ns.json<unknown[]>("-6", "route", "show", "table", "all", "dev", "eth0");
    expect(await v6(guest.ns)).toEqual(await v6(pod));
  });

  it("a tun device (no MAC) is made in the guest, found by name, with its routes and the rule naming it; exit 0", async () => {
    const { pod, guest } = await setUp();
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await pod.ip("tuntap", "add", "dev", "tun0", "mode", "tun");
    await pod.ip("addr", "add", "10.9.0.1/24", "dev", "tun0");
    await pod.ip("link", "set", "tun0", "up");
    await pod.ip("route", "add", "10.99.0.0/16", "dev", "tun0");
    await pod.ip("route", "add", "10.98.0.0/16", "via", "10.1.0.1", "dev", "eth0");
    await pod.ip("rule", "add", "priority", "100", "iif", "tun0", "lookup", "100");
    const s = await sync(guest, pod);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(s.stdout).not.toMatch(/not mirrored/);
    expect(await addrs(guest.ns, "eth0")).toEqual(await addrs(pod, "eth0"));
    expect(await addrs(guest.ns, "tun0")).toEqual(await addrs(pod, "tun0"));
    const info = async (ns: Netns) =>
      (await ns.json<{ linkinfo?: { info_data?: unknown } }[]>("link", "show", "tun0"))[0]
        ?.linkinfo;
    expect(await info(guest.ns)).toEqual(await info(pod));
    for (const dev of ["eth0", "tun0"]) {
      const main = (ns: Netns) => ns.json<unknown[]>("route", "show", "table", "main", "dev", dev);
      expect(await main(guest.ns)).toEqual(await main(pod));
    }
    // The rule's iif exists on both sides now: attached in both.
    expect(await rules(guest.ns)).toEqual(await rules(pod));
    expect((await rules(guest.ns)).filter((l) => l.includes("iif_detached"))).toHaveLength(0);
  });
});
