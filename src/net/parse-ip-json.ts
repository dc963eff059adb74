/**
 * Pure parsers of `ip -json -details` output into the model. iproute2's JSON
 * shapes stop here. Unknown or malformed entries are skipped, never thrown
 * on, except where the document itself is not JSON.
 */
import { type Family, familyOf } from "./address";
import { type Address, type Link, makeRoute, type Neighbor, type Route } from "./model";
import { LOOPBACK } from "./vocabulary/links";
import {
  canonicalDst,
  DEFAULT_PROTOCOL,
  DEFAULT_ROUTE_TYPE,
  parseScope,
  parseTable,
} from "./vocabulary/routes";

type Json = Record<string, unknown>;

function asArray(doc: unknown): Json[] {
  return Array.isArray(doc) ? (doc.filter((x) => x && typeof x === "object") as Json[]) : [];
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** asArray(v)[0] without the filtered copy. */
function firstObject(v: unknown): Json | undefined {
  if (!Array.isArray(v)) return undefined;
  for (const x of v) if (x && typeof x === "object") return x as Json;
  return undefined;
}

/** Links with their addresses, from `ip -json -details addr show`. */
export function parseLinks(doc: unknown): Link[] {
  const links: Link[] = [];
  for (const l of asArray(doc)) {
    const name = str(l.ifname);
    if (name === undefined || typeof l.ifindex !== "number") continue;
    const addresses: Address[] = [];
    for (const a of asArray(l.addr_info)) {
      const local = str(a.local);
      if (local === undefined || typeof a.prefixlen !== "number") continue;
      const family: Family = a.family === "inet6" ? 6 : 4;
      addresses.push({
        family,
        address: local,
        prefix: a.prefixlen,
        scope: str(a.scope) ?? "global",
        ...(a.noprefixroute === true ? { noprefixroute: true } : {}),
        // IFA_ADDRESS differs from IFA_LOCAL only on a point-to-point address.
        ...(typeof a.address === "string" && a.address !== local ? { peer: a.address } : {}),
        ...(a.secondary === true ? { secondary: true } : {}),
        ...(typeof a.metric === "number" ? { metric: a.metric } : {}),
      });
    }
    const linkinfo = l.linkinfo as Json | undefined;
    links.push({
      index: l.ifindex,
      name,
      mac: (str(l.address) ?? "").toLowerCase(),
      mtu: typeof l.mtu === "number" ? l.mtu : 0,
      flags: Array.isArray(l.flags)
        ? l.flags.filter((f): f is string => typeof f === "string")
        : [],
      kind: str(linkinfo?.info_kind) ?? "",
      addresses,
    });
  }
  return links;
}

/** iproute2's dst ("default", "10.0.0.1", "10.0.0.0/24") as a canonical CIDR. */
function parseDst(dst: string, family: Family): string | undefined {
  // The family is inferred; a destination of the other one keeps its own.
  return canonicalDst(dst, family) ?? canonicalDst(dst, family === 4 ? 6 : 4);
}

/**
 * Main-table routes from `ip -json -details route show table all` (both
 * families, family inferred per route, other tables left out), or of one
 * known family from `ip -json -details [-6] route show table main`.
 * Multipath routes (with `nexthops`) keep their first hop's device only.
 */
export function parseRoutes(doc: unknown, knownFamily?: Family): Route[] {
  const out: Route[] = [];
  parseRouteList(doc, knownFamily, (route, table) => {
    if (table === undefined || table === "main") out.push(route);
  });
  return out;
}

/**
 * Routes of every table from `ip -json -details route show table all`, each
 * with its numeric `table`. The kernel files IPv6 blackhole, unreachable and
 * prohibit routes under `lo`; here they have no device, as they are written.
 */
export function parseAllTableRoutes(doc: unknown): Route[] {
  const out: Route[] = [];
  parseRouteList(doc, undefined, (r, name) => {
    const table = parseTable(name ?? "main");
    if (table === undefined) return;
    out.push({
      ...r,
      table,
      dev: r.type !== DEFAULT_ROUTE_TYPE && r.dev === LOOPBACK && r.family === 6 ? "" : r.dev,
    });
  });
  return out;
}

/** Calls `each` with every route of `doc` and its table's name, in order. */
function parseRouteList(
  doc: unknown,
  knownFamily: Family | undefined,
  each: (route: Route, table: string | undefined) => void,
): void {
  for (const r of asArray(doc)) {
    const rawDst = str(r.dst);
    if (rawDst === undefined) continue;
    const family = knownFamily ?? routeFamily(r, rawDst);
    const dst = parseDst(rawDst, family);
    if (dst === undefined) continue;
    const flags = Array.isArray(r.flags) ? r.flags : [];
    const metrics = firstObject(r.metrics);
    const gateway = str(r.gateway);
    let dev = str(r.dev) ?? "";
    if (!dev) dev = str(firstObject(r.nexthops)?.dev) ?? "";
    const route = makeRoute(
      family,
      dst,
      gateway !== undefined && familyOf(gateway) === family ? gateway : undefined,
      dev,
      str(r.prefsrc),
      parseScope(r.scope),
      typeof r.metric === "number" ? r.metric : 0,
      flags.includes("onlink"),
      typeof metrics?.mtu === "number" ? metrics.mtu : 0,
      r.protocol === undefined ? DEFAULT_PROTOCOL : String(r.protocol),
      str(r.type) ?? DEFAULT_ROUTE_TYPE,
    );
    each(route, str(r.table));
  }
}

/**
 * The family of a route in a dump of both (`route show table all`): from its
 * addresses when they tell; otherwise IPv6 routes are the ones that carry a
 * router preference (the kernel puts RTA_PREF on every IPv6 route and on no
 * IPv4 one), which settles `default dev eth0`.
 */
function routeFamily(r: Json, dst: string): Family {
  if (dst.includes(":")) return 6;
  const gateway = str(r.gateway);
  if (gateway !== undefined) return familyOf(gateway);
  const prefsrc = str(r.prefsrc);
  if (prefsrc !== undefined) return familyOf(prefsrc);
  return "pref" in r ? 6 : 4;
}

/** Neighbours from `ip -json neigh show`. */
export function parseNeighbors(doc: unknown): Neighbor[] {
  const out: Neighbor[] = [];
  for (const n of asArray(doc)) {
    const dst = str(n.dst);
    const dev = str(n.dev);
    if (dst === undefined || dev === undefined) continue;
    out.push({
      family: familyOf(dst),
      ip: dst,
      dev,
      lladdr: (str(n.lladdr) ?? "").toLowerCase(),
      state: Array.isArray(n.state)
        ? n.state.filter((s): s is string => typeof s === "string")
        : [],
      router: "router" in n,
    });
  }
  return out;
}
