/**
 * The ignore list's entries about routes, neighbours and lookups
 * (ignore.test.ts runs them): a route's expiry, neighbour entries the
 * kernel learns or makes, lookups through any link-local (the source's:
 * ignore-sources.ts).
 */
import { expect, it } from "vitest";
import { waitFor } from "../helpers/wait";
import { ipOk } from "./build";
import { compareReads } from "./compare";
import { LEARNED_STATES } from "./ignore";
import { entry, entryMadeInAOnly, json, MAC, scratch } from "./ignore-helpers";
import { explained, lookup } from "./lookups";
import { normalise } from "./normalise";
import { type NetnsRead, readNetns } from "./read";

/** A route's expiry; neighbours learned, on a NOARP link, multicast. */
export function routeAndNeighbourEntries(): void {
  it(entry("routeExpires"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    const add = (ns: string) =>
      ipOk("-n", ns, "-6", "route", "add", "fd70::/64", "dev", "eth0", "expires", "600");
    const expires = (r: NetnsRead) => r.routes.find((x) => x.dst === "fd70::/64")?.expires;
    await add(a.ns);
    await waitFor(
      async () =>
        Number(
          expires({ routes: await json(a.ns, "-6", "route", "show", "fd70::/64") } as NetnsRead),
        ) < 599,
      { what: "A's route to count down a second" },
    );
    await add(b.ns);
    // Read both until one read shows the counts apart: B's is a second or more behind, but a
    // loaded machine can take as long between the two routes' reads.
    const [ra, rb] = await waitFor(
      async () => {
        const reads = await Promise.all([readNetns(a.ns), readNetns(b.ns)]);
        return expires(reads[0]) !== expires(reads[1]) && reads;
      },
      { what: "a read of both with the two routes' remaining seconds apart", timeoutMs: 30_000 },
    );
    expect([typeof expires(ra), typeof expires(rb)]).toEqual(["number", "number"]);
    expect(compareReads(ra, rb)).toEqual([]);
  });

  it(entry("neighbourLearned"), async () => {
    // The kernel learns the peer's MAC from a datagram sent to it, in A only.
    await entryMadeInAOnly({ subnet: "10.91.0", arp: true, what: "the peer's MAC learned" }, (n) =>
      ((n.state ?? []) as string[]).some((x) => x !== "INCOMPLETE" && LEARNED_STATES.has(x)),
    );
  });

  it(entry("neighbourNoarpLink"), async () => {
    // On a NOARP link the kernel resolves the datagram's destination as eth0's own MAC.
    await entryMadeInAOnly(
      { subnet: "10.92.0", arp: false, what: "a NOARP entry holding eth0's own MAC" },
      (n) => n.lladdr === MAC && ((n.state ?? []) as string[]).includes("NOARP"),
    );
  });

  it(entry("neighbourKernelMulticast"), async () => {
    const a = await scratch.withVeth(MAC);
    // No neighbour command: the kernel adds them as it joins groups and sends its reports.
    await waitFor(
      async () => (await json(a.ns, "-6", "neigh", "show", "nud", "all", "dev", "eth0")).length > 0,
      {
        what: "the kernel's multicast neighbours",
      },
    );
    const r = await readNetns(a.ns);
    const multicast = { r, m: r.neighbours.filter((n) => String(n.dst).startsWith("ff02:")) };
    expect(multicast.m.length).toBeGreaterThan(0);
    expect(multicast.m.every((n) => (n.state as string[]).includes("NOARP"))).toBe(true);
    expect(normalise(multicast.r).objects.filter((o) => o.kind === "neighbour")).toEqual([]);
  });
}

/** Lookups: a link-local gateway through any link, a source of another link. */
export function lookupEntries(): void {
  it(entry("lookupLinkLocalAnyLink"), async () => {
    // Two links alike in A and B, brought up in the other order.
    const [a, b, peer] = [await scratch.netns(), await scratch.netns(), await scratch.netns()];
    const macs = { x0: "02:5a:00:00:00:d1", y0: "02:5a:00:00:00:d2" };
    for (const [ns, order] of [
      [a, ["x0", "y0"]],
      [b, ["y0", "x0"]],
    ] as const) {
      for (const name of order) {
        const p = `${ns === a ? "a" : "b"}${name}`;
        await ipOk(
          "-n",
          ns,
          "link",
          "add",
          name,
          "address",
          macs[name],
          "type",
          "veth",
          "peer",
          "name",
          p,
          "netns",
          peer,
        );
        await ipOk("-n", peer, "link", "set", p, "up");
        await ipOk("-n", ns, "link", "set", name, "up");
        await waitFor(
          async () => (await json(ns, "-6", "route", "show", "fe80::/64", "dev", name)).length > 0,
          { what: `fe80::/64 on ${name}` },
        );
      }
    }
    const probe = { args: ["-6", "route", "get", "fe80::1"] };
    const [la, lb] = [await lookup(a, probe), await lookup(b, probe)];
    expect([la, lb].map((x) => /dev (\S+)/.exec(x)?.[1])).toEqual(["x0", "y0"]);
    const none = { pod: new Map(), guest: new Map() };
    expect(explained(probe, la, lb, none)).toBe("lookupLinkLocalAnyLink");
    // With the interface named, the answer is compared.
    const oif = { args: ["-6", "route", "get", "fe80::1", "oif", "x0"] };
    expect(explained(oif, la, lb, none)).toBeUndefined();
  });
}
