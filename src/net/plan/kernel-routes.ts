/**
 * The routes the kernel makes in the main table for a link's addresses,
 * inferred from the addresses alone (checked against the kernel in
 * test/netns/kernel-routes.test.ts). Only links that are administratively
 * up get them; `noprefixroute` addresses get none of their own.
 *
 * - IPv4 (fib_add_ifaddr): `net/p dev L proto kernel scope link src local`
 *   for the network of the peer when there is one, else of the address;
 *   none for a /32 without a peer, none for a secondary address (one in the
 *   subnet of an earlier address on the link), metric from `metric N`.
 * - IPv6 (addrconf): `net/p dev L proto kernel metric 256` for every
 *   prefix length, /128 included (the Calico shape), and `peer/128` for a
 *   peer, whatever the peer's prefix; `metric N` replaces 256, and equal
 *   routes from several addresses are one route.
 *
 * Knowing them lets a route table be reconciled the same way whatever
 * happened before: a kernel route that a request once superseded comes back
 * when no request does; and diff does not count them as differences.
 */
import { networkText, parseIp } from "../model/address";
import type { Address, Link, Route } from "../model/model";
import { isManagedLink } from "../vocabulary/links";
import { KERNEL_V6_METRIC, SCOPE_LINK, SCOPE_UNIVERSE } from "../vocabulary/routes";

function network(address: string, prefix: number): string | undefined {
  const parsed = parseIp(address);
  if (typeof parsed === "string") return undefined;
  return `${networkText(parsed.bytes, prefix)}/${prefix}`;
}

function kernelRoute(family: 4 | 6, dst: string, dev: string, a: Address): Route {
  return family === 4
    ? {
        family: 4,
        dst,
        dev,
        prefsrc: a.address,
        scope: SCOPE_LINK,
        metric: a.metric ?? 0,
        onlink: false,
        mtu: 0,
        protocol: "kernel",
        type: "unicast",
      }
    : {
        family: 6,
        dst,
        dev,
        scope: SCOPE_UNIVERSE,
        metric: a.metric || KERNEL_V6_METRIC,
        onlink: false,
        mtu: 0,
        protocol: "kernel",
        type: "unicast",
      };
}

/** The destinations the kernel routes for one address (before de-duplication). */
function destinations(a: Address): string[] {
  if (a.noprefixroute && a.family === 4) return [];
  if (a.family === 4) {
    if (a.secondary) return [];
    if (!a.peer && a.prefix >= 32) return [];
    const dst = network(a.peer ?? a.address, a.prefix);
    return dst ? [dst] : [];
  }
  const out: string[] = [];
  if (!a.noprefixroute) out.push(network(a.address, a.prefix) ?? "");
  if (a.peer) out.push(network(a.peer, 128) ?? "");
  return out.filter(Boolean);
}

/**
 * The /128 routes IPv6 makes for the peers of `links`' addresses (links
 * up): the kernel adds them a moment after the address, from addrconf's
 * work queue, not before `ip` has its answer.
 */
export function peerRoutes6(
  links: readonly Pick<Link, "name" | "flags" | "mtu" | "addresses">[],
): { dst: string; dev: string }[] {
  const out: { dst: string; dev: string }[] = [];
  for (const link of links) {
    // Below 1280 bytes a link has no IPv6 at all.
    if (!isManagedLink(link.name) || !link.flags.includes("UP") || link.mtu < 1280) continue;
    for (const a of link.addresses) {
      const dst = a.family === 6 && a.peer ? network(a.peer, 128) : undefined;
      if (dst) out.push({ dst, dev: link.name });
    }
  }
  return out;
}

/** Whether `routes` hold the main-table IPv6 route `p` (peerRoutes6). */
export function hasPeerRoute(routes: readonly Route[], p: { dst: string; dev: string }): boolean {
  return routes.some(
    (r) => r.family === 6 && r.dst === p.dst && r.dev === p.dev && (r.table ?? 254) === 254,
  );
}

export function impliedKernelRoutes(
  links: readonly Pick<Link, "name" | "flags" | "addresses">[],
): Route[] {
  const out = new Map<string, Route>();
  for (const link of links) {
    if (!isManagedLink(link.name) || !link.flags.includes("UP")) continue;
    for (const a of link.addresses) {
      for (const dst of destinations(a)) {
        const route = kernelRoute(a.family, dst, link.name, a);
        // IPv4: one route per network per link, from its first (primary)
        // address, whatever the metric. IPv6: one per network, link and metric.
        const key = `${a.family} ${dst} ${link.name}${a.family === 6 ? ` ${route.metric}` : ""}`;
        if (!out.has(key)) out.set(key, route);
      }
    }
  }
  return [...out.values()];
}
