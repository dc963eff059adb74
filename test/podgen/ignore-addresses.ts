/**
 * The ignore list's entries about addresses (ignore.test.ts runs them):
 * lifetimes, duplicate address detection, the guest's nodad, and the
 * kernel's own link-local with its route and the lookups from it.
 */
import { expect, it } from "vitest";
import { waitFor } from "../helpers/wait";
import { ipOk } from "./build";
import { compareReads } from "./compare";
import { isKernelLinkLocal } from "./ignore";
import { addrs, entry, eth0Addrs, json, linkLocal, MAC, scratch } from "./ignore-helpers";
import { lookup } from "./lookups";
import { type NetnsRead, readNetns } from "./read";

/** Lifetimes, tentative addresses, the guest's nodad. */
export function addressEntries(): void {
  it(entry("addressLifetimes"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    const add = (ns: string) =>
      ipOk(
        "-n",
        ns,
        "address",
        "add",
        "10.90.0.2/24",
        "dev",
        "eth0",
        "valid_lft",
        "1000",
        "preferred_lft",
        "500",
      );
    await add(a.ns);
    await waitFor(async () => Number((await eth0Addrs(a.ns))[0]?.valid_life_time) < 999, {
      what: "two seconds to pass",
    });
    await add(b.ns);
    // Both read at once: the two seconds between the adds stay between the numbers.
    const [ra, rb] = await Promise.all([readNetns(a.ns), readNetns(b.ns)]);
    expect(addrs(ra)[0]?.valid_life_time).not.toEqual(addrs(rb)[0]?.valid_life_time);
    expect(compareReads(ra, rb)).toEqual([]);
  });

  it(entry("addressTentative"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    // Ten probes a second apart: DAD outlasts the reads even on a busy machine.
    await ipOk("netns", "exec", a.ns, "sysctl", "-qw", "net.ipv6.conf.eth0.dad_transmits=10");
    await ipOk("-n", a.ns, "-6", "address", "add", "fd5a::2/64", "dev", "eth0");
    await ipOk("-n", b.ns, "-6", "address", "add", "fd5a::2/64", "dev", "eth0", "nodad");
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b.ns)];
    expect(addrs(ra).find((x) => x.local === "fd5a::2")?.tentative).toBe(true);
    expect(addrs(rb).find((x) => x.local === "fd5a::2")?.tentative).toBeUndefined();
    // (Its table local route comes with the end of DAD: the builder waits for that.)
    expect(compareReads(ra, rb).filter((d) => d.kind === "address")).toEqual([]);
  });

  it(entry("addressGuestNodad"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    await ipOk("-n", a.ns, "-6", "address", "add", "fd5b::2/64", "dev", "eth0");
    await ipOk("-n", b.ns, "-6", "address", "add", "fd5b::2/64", "dev", "eth0", "nodad");
    // As the builder settles a pod: its table local route comes once DAD is over.
    await waitFor(async () => !(await eth0Addrs(a.ns)).some((x) => x.tentative), {
      what: "DAD",
    });
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b.ns)];
    const about = (x: NetnsRead, y: NetnsRead) =>
      compareReads(x, y).filter((d) => d.what.includes("fd5b::2"));
    expect(about(ra, rb)).toEqual([]);
    // The other way round (the pod's nodad missing in the guest) is a difference.
    expect(about(rb, ra).map((d) => d.field)).toEqual(["nodad"]);
  });
}

/** The kernel's link-local: the address, its route, a lookup's source. */
export function kernelLinkLocalEntries(): void {
  it(`${entry("addressKernelLinkLocal")}; ${entry("routeKernelLinkLocal")}`, async () => {
    // A pod's veth that came up with one MAC and was given another keeps the first one's link-local.
    const a = await scratch.withVeth("02:5a:00:00:00:77");
    await linkLocal(a.ns);
    await ipOk("-n", a.ns, "link", "set", "eth0", "address", MAC);
    const b = await scratch.withVeth(MAC);
    await linkLocal(b.ns);
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b.ns)];
    const ll = (r: NetnsRead) =>
      addrs(r)
        .filter((x) => String(x.local).startsWith("fe80:"))
        .map((x) => x.local);
    expect(ll(ra)).toEqual(["fe80::5a:ff:fe00:77"]);
    expect(ll(rb)).toEqual(["fe80::5a:ff:fe00:1"]);
    const localRoute = (r: NetnsRead) =>
      r.routes
        .filter((x) => x.table === "local" && String(x.dst).startsWith("fe80:"))
        .map((x) => x.dst);
    expect(localRoute(ra)).not.toEqual(localRoute(rb));
    expect(compareReads(ra, rb)).toEqual([]);
    // A link-local the pod adds itself is compared.
    expect(isKernelLinkLocal("fe80::99")).toBe(false);
    await ipOk("-n", a.ns, "-6", "address", "add", "fe80::99/64", "dev", "eth0", "nodad");
    const d = compareReads(await readNetns(a.ns), rb).map((x) => x.text);
    expect(d.some((t) => t.startsWith("pod only: address fe80::99/64"))).toBe(true);
  });

  it(entry("lookupKernelLinkLocalSource"), async () => {
    const a = await scratch.withVeth(MAC);
    // B's link came up with another MAC and got MAC later: its kernel link-local is another.
    const b = await scratch.withVeth("02:5a:00:00:00:77");
    await ipOk("-n", b.ns, "link", "set", "eth0", "address", MAC);
    const probe = { args: ["-6", "route", "get", "fe80::1", "oif", "eth0"] };
    const src = async (ns: string) => {
      const [r] = await json(ns, ...probe.args);
      return String(r?.prefsrc);
    };
    const [sa, sb] = await waitFor(
      async () => {
        const both = [await src(a.ns), await src(b.ns)];
        return both.every((s) => isKernelLinkLocal(s)) && both;
      },
      { what: "both sides answering with their kernel link-local", timeoutMs: 20_000 },
    );
    expect(sa).not.toBe(sb);
    expect(await lookup(a.ns, probe)).toBe(await lookup(b.ns, probe));
  });
}
