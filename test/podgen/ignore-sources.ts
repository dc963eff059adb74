/**
 * The ignore list's entries about the source a lookup picks (ignore.test.ts
 * runs them): two real netns alike but for the order their links were
 * made (or how one multipath route was made), the same lookup asked of
 * both, the answers differing in the source alone, and the judge
 * (src/host/compare/source-order.ts, diff's too) explaining exactly that
 * and nothing beside it: a source that could not win is still different.
 */
import { expect, it } from "vitest";
import { run } from "../helpers/process";
import { ipOk } from "./build";
import { entry, scratch } from "./ignore-helpers";
import { explained, lookup, sameHashSeed } from "./lookups";
import { readNetns } from "./read";

const none = { pod: new Map(), guest: new Map() };
type Side = "a" | "b";

/**
 * Two netns, A and B, each with the veths of its order made in that order
 * (up, each peer up in a third netns), then `setup`'s `ip` commands run
 * for each link as it is made.
 */
async function alike(
  orders: Record<Side, string[]>,
  setup: (side: Side, name: string) => string[][],
): Promise<Record<Side, string>> {
  const out = { a: await scratch.netns(), b: await scratch.netns() };
  const peer = await scratch.netns();
  for (const side of ["a", "b"] as const) {
    for (const name of orders[side]) {
      const ns = out[side];
      await ipOk("-n", ns, "link", "add", name, "type", "veth", "peer", "name", side + name);
      await ipOk("-n", ns, "link", "set", side + name, "netns", peer);
      await ipOk("-n", peer, "link", "set", side + name, "up");
      await ipOk("-n", ns, "link", "set", name, "up");
      for (const args of setup(side, name)) await ipOk("-n", ns, ...args);
    }
  }
  return out;
}

/** An answer with its source replaced: what a mirror with a wrong source would say. */
const withSource = (answer: string, src: string) => answer.replace(/prefsrc \S+/, `prefsrc ${src}`);
const sourceOf = (answer: string) => /prefsrc (\S+)/.exec(answer)?.[1];

/** IPv4 through a link with no global address (z0, lo): the first link made with one. */
async function otherLink4(): Promise<void> {
  // z0 has a host-scoped IPv4 address only, lo too: neither gives a source; y0 a secondary.
  const v4: Record<string, string[][]> = {
    x0: [["10.81.0.2/24"]],
    y0: [["10.82.0.2/24"], ["10.82.0.3/24"]],
    z0: [["10.83.0.2/24", "scope", "host"]],
  };
  const ns = await alike({ a: ["x0", "y0", "z0"], b: ["y0", "x0", "z0"] }, (_side, name) =>
    (v4[name] ?? []).map(([addr, ...more]) => ["addr", "add", addr ?? "", "dev", name, ...more]),
  );
  const read = await readNetns(ns.a);
  for (const oif of ["z0", "lo"]) {
    const probe = { args: ["route", "get", "10.9.9.9", "oif", oif] };
    const [la, lb] = [await lookup(ns.a, probe), await lookup(ns.b, probe)];
    expect([la, lb]).toEqual([
      `type unicast dev ${oif} prefsrc 10.81.0.2`,
      `type unicast dev ${oif} prefsrc 10.82.0.2`,
    ]);
    expect(explained(probe, la, lb, none, read)).toBe("lookupSourceOtherLink");
    // A secondary address, a host-scoped one, one the pod has not: never what the walk takes.
    for (const src of ["10.82.0.3", "10.83.0.2", "10.84.0.2"])
      expect(explained(probe, la, withSource(lb, src), none, read)).toBeUndefined();
  }
  // Through a link with an address of its own, the source is compared.
  const x0 = { args: ["route", "get", "10.9.9.9", "oif", "x0"] };
  const lx = await lookup(ns.a, x0);
  expect(explained(x0, lx, withSource(lx, "10.82.0.2"), none, read)).toBeUndefined();
}

/** IPv6 through a link with a deprecated address only: two other links' addresses tie. */
async function otherLink6(): Promise<void> {
  // IPv6: z0's only global address is deprecated; x0's and y0's share 54 bits with the destination.
  const v6: Record<string, string[]> = {
    x0: ["fd75:0:0:200::2/64"],
    y0: ["fd75:0:0:301::2/64"],
    z0: ["fd75:0:0:100::2/64", "preferred_lft", "0"],
  };
  const six = await alike({ a: ["x0", "y0", "z0"], b: ["y0", "x0", "z0"] }, (_side, name) => [
    ["-6", "addr", "add", ...(v6[name] ?? []), "dev", name, "nodad"],
  ]);
  const probe6 = { args: ["-6", "route", "get", "fd75:0:0:100::99"] };
  const [l6a, l6b] = [await lookup(six.a, probe6), await lookup(six.b, probe6)];
  expect([l6a, l6b].map(sourceOf)).toEqual(["fd75:0:0:200::2", "fd75:0:0:301::2"]);
  const read6 = await readNetns(six.a);
  expect(explained(probe6, l6a, l6b, none, read6)).toBe("lookupSourceOtherLink");
  // z0's deprecated address ranks below the others: never a tie.
  const deprecated = withSource(l6b, "fd75:0:0:100::2");
  expect(explained(probe6, l6a, deprecated, none, read6)).toBeUndefined();
}

/** A hop appended to an IPv6 multipath route without the source of the first. */
async function multipathHop(): Promise<void> {
  // A appends the second hop without a source; B gives one source to the route of both hops.
  const route = ["-6", "route", "add", "2001:db8::/32", "metric", "7", "src", "fd76::2"];
  const hops = ["via", "fd76::1", "dev", "x0"];
  const ns = await alike({ a: ["x0"], b: ["x0"] }, (side) => [
    ["-6", "addr", "add", "fd76::2/64", "dev", "x0", "nodad"],
    ...(side === "a"
      ? [
          [...route, ...hops],
          ["-6", "route", "append", "2001:db8::/32", "metric", "7", "via", "fe80::1", "dev", "x0"],
        ]
      : [[...route, "nexthop", ...hops, "nexthop", "via", "fe80::1", "dev", "x0"]]),
  ]);
  for (const side of [ns.a, ns.b]) {
    const r = await run("ip", [
      "netns",
      "exec",
      side,
      "sysctl",
      "-qw",
      "net.ipv6.conf.all.forwarding=1",
    ]);
    expect(r.code, r.stderr).toBe(0);
  }
  await sameHashSeed(ns.a, ns.b);
  const read = await readNetns(ns.a);
  // The same route listed on both sides, one source for the whole of it.
  const listed = (r: typeof read) => r.routes.filter((x) => x.dst === "2001:db8::/32");
  expect(listed(read)).toEqual(listed(await readNetns(ns.b)));
  // Input lookups through each hop: the first alike, the second without a source in A alone.
  const seen = new Map<string, [string, string]>();
  for (let i = 1; i < 64 && seen.size < 2; i++) {
    const probe = {
      args: ["-6", "route", "get", `2001:db8::${i}`, "from", "fd77::9", "iif", "x0"],
    };
    const [la, lb] = [await lookup(ns.a, probe), await lookup(ns.b, probe)];
    const gw = /gateway (\S+)/.exec(la)?.[1] ?? "";
    if (gw === /gateway (\S+)/.exec(lb)?.[1] && !seen.has(gw)) {
      seen.set(gw, [la, lb]);
      const why = explained(probe, la, lb, none, read);
      if (gw === "fd76::1") {
        expect([sourceOf(la), sourceOf(lb)]).toEqual(["fd76::2", "fd76::2"]);
        expect(why).toBeUndefined();
      } else {
        expect([sourceOf(la), sourceOf(lb)]).toEqual([undefined, "fd76::2"]);
        expect(why).toBe("lookupSourceMultipathHop");
        // A source in the guest that is not the route's: still different.
        expect(
          explained(probe, la, `${lb.replace(/ prefsrc \S+/, "")} prefsrc fd76::9`, none, read),
        ).toBeUndefined();
      }
    }
  }
  expect([...seen.keys()].sort()).toEqual(["fd76::1", "fe80::1"]);
}

/** The source taken by the order of links (IPv4, IPv6), and a multipath hop's own. */
export function sourceEntries(): void {
  it(entry("lookupSourceOtherLink"), async () => {
    await otherLink4();
    await otherLink6();
  });
  it(entry("lookupSourceMultipathHop"), multipathHop);
}
