/**
 * The IPv6 half of source-order.ts: when two different sources are an
 * IPv6 tie the kernel breaks by the order of links, and when a source
 * comes from a hop of a multipath route that no listing shows. Pure.
 *
 * The kernel picks an IPv6 source by ranking every candidate address by a
 * list of rules in turn (the same address as the destination, a scope fit
 * for the destination's, not deprecated or optimistic, a home address,
 * on the outgoing link, the policy label of the destination, temporary or
 * public as the link's use_tempaddr asks, an ORCHID like the destination,
 * the longest prefix shared with the destination, up to the address's own
 * prefix length); two candidates equal under every rule are left in the
 * order it met them, links in the order they were made and each link's
 * addresses in its own order, and the first is kept.
 */
import ipaddr from "ipaddr.js";
import { cidrContains } from "../../net/model/address";
import type { Json } from "./complete-read";
import { type Found, findAddress, type SourceQuestion, type SourceRead } from "./source-question";

/** The kernel's default policy labels (no `ip addrlabel` set), the longest prefix first. */
const LABELS: readonly [string, number][] = [
  ["::1/128", 0],
  ["::ffff:0:0/96", 4],
  ["::/96", 3],
  ["2001:10::/28", 7],
  ["2001::/32", 6],
  ["2002::/16", 2],
  ["3ffe::/16", 12],
  ["fec0::/10", 11],
  ["fc00::/7", 5],
  ["::/0", 1],
];

const label = (addr: string) => LABELS.find(([p]) => cidrContains(p, addr))?.[1] ?? 1;
const orchid = (addr: string) => cidrContains("2001:10::/28", addr);

function bytes(addr: string): number[] | undefined {
  try {
    return ipaddr.IPv6.parse(addr).toByteArray();
  } catch {
    return undefined;
  }
}

/** Leading bits two IPv6 addresses share. */
function shared(a: number[], b: number[]): number {
  for (let i = 0; i < 16; i++) {
    const x = (a[i] as number) ^ (b[i] as number);
    if (x !== 0) return i * 8 + Math.clz32(x) - 24;
  }
  return 128;
}

/** Each rule's score of a candidate, in the kernel's order (the outgoing-link rule aside: neither is on it). */
function scores(read: SourceRead, found: Found, to: string, dst: number[]): unknown[] | undefined {
  const { info, link } = found;
  const local = String(info.local);
  const b = bytes(local);
  if (b === undefined || info.tentative === true || info.dadfailed === true) return undefined;
  const tempaddr = Number(read.sysctls.get(`ipv6/conf/${link}/use_tempaddr`) ?? 0);
  return [
    shared(b, dst) === 128,
    info.scope,
    info.deprecated === true,
    info.optimistic === true,
    info.home === true,
    label(local) === label(to),
    (info.temporary === true) !== tempaddr >= 2,
    orchid(local) === orchid(to),
    Math.min(shared(b, dst), Number(info.prefixlen)),
  ];
}

/**
 * Whether the two sources are IPv6 addresses of two other links than the
 * answer's, of the same layer-3 domain, equal under every rule: the kernel
 * keeps whichever of them it met first.
 */
export function tiedByOrder(
  q: SourceQuestion,
  read: SourceRead,
  domain: (link: string) => string,
): boolean {
  const dst = bytes(q.to);
  if (dst === undefined || q.input || q.pod === undefined || q.guest === undefined) return false;
  // A multicast or link-local destination takes its source from the outgoing link alone.
  if (dst[0] === 0xff || (dst[0] === 0xfe && ((dst[1] as number) & 0xc0) === 0x80)) return false;
  const a = findAddress(read, "inet6", q.pod);
  const b = findAddress(read, "inet6", q.guest);
  if (!a || !b || a.link === b.link || a.link === q.dev || b.link === q.dev) return false;
  if (domain(a.link) !== domain(q.dev) || domain(b.link) !== domain(q.dev)) return false;
  const [sa, sb] = [scores(read, a, q.to, dst), scores(read, b, q.to, dst)];
  return sa !== undefined && JSON.stringify(sa) === JSON.stringify(sb);
}

/**
 * Whether the answers went through a hop of an IPv6 multipath route other
 * than its first (same gateway, device and table), and the guest shows
 * the source that route is listed with (an input lookup: that source or
 * none) while the pod shows one of its own addresses or none. A hop
 * appended to a route (`ip -6 route append`) keeps its own source, or
 * none; a listing shows the first hop's for the whole route, so a mirror
 * gives every hop that one.
 */
export function appendedHop(q: SourceQuestion, read: SourceRead): boolean {
  if (q.gateway === undefined || !q.to.includes(":")) return false;
  const table = q.table ?? "main";
  const route = read.routes.find(
    (r) =>
      r.family === "inet6" &&
      String(r.table ?? "main") === table &&
      Array.isArray(r.nexthops) &&
      (r.nexthops as Json[]).some((h, i) => i > 0 && h.gateway === q.gateway && h.dev === q.dev),
  );
  if (route === undefined) return false;
  const listed = typeof route.prefsrc === "string" ? route.prefsrc : undefined;
  if (q.input ? q.guest !== listed : listed !== undefined && q.guest !== listed) return false;
  if (!q.input && q.guest !== undefined && !findAddress(read, "inet6", q.guest)) return false;
  return q.pod === undefined ? q.input : findAddress(read, "inet6", q.pod) !== undefined;
}
