/**
 * Pure parsers of `ip -json -details route` output into the model. Unknown
 * or malformed entries are skipped, never thrown on.
 */
import { type Family, familyOf } from "../model/address";
import { type Hop, makeRoute, type Route } from "../model/model";
import { readAttrs } from "../vocabulary/attrs";
import { LOOPBACK } from "../vocabulary/links";
import {
  locksOfLine,
  METRIC_JSON_KEYS,
  ROUTE_ATTRS,
  ROUTE_JSON_KEYS,
} from "../vocabulary/route-attrs";
import {
  canonicalDst,
  DEFAULT_PROTOCOL,
  DEFAULT_ROUTE_TYPE,
  LINKLESS_ROUTE_TYPES,
  parseScope,
  parseTable,
  parseTos,
} from "../vocabulary/routes";
import { asArray, firstObject, type Json, str } from "./json-fields";

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
 * with its numeric `table` and everything the model carries: tos, IPv6
 * `from`, multipath paths, a nexthop object, a gateway of the other family
 * (IPv4 `via inet6`), and the attributes of vocabulary/route-attrs.ts
 * (their locks when {@link addLocks} added them). The kernel files IPv6
 * blackhole, unreachable and prohibit routes under `lo`; here they have no
 * device, as they are written.
 */
export function parseAllTableRoutes(doc: unknown): Route[] {
  const out: Route[] = [];
  for (const r of asArray(doc)) {
    const route = parseFullRoute(r);
    if (route) out.push(route);
  }
  return out;
}

/** A gateway as `ip -j` gives it: `gateway`, or `via {family, host}` for one of the other family. */
function gatewayOf(r: Json, family: Family): string | undefined {
  let gw = str(r.gateway);
  if (gw === undefined && r.via && typeof r.via === "object") gw = str((r.via as Json).host);
  if (gw === undefined) return undefined;
  const f = familyOf(gw);
  // IPv4 routes may go via an IPv6 gateway (RFC 5549); IPv6 routes never via IPv4.
  return f === family || family === 4 ? gw : undefined;
}

function hopsOf(list: unknown, family: Family): Hop[] | undefined {
  if (!Array.isArray(list)) return undefined;
  const hops: Hop[] = [];
  for (const h of asArray(list)) {
    const gateway = gatewayOf(h, family);
    const flags = Array.isArray(h.flags) ? h.flags : [];
    const hop: Hop = {
      dev: str(h.dev) ?? "",
      weight: typeof h.weight === "number" ? h.weight : 1,
      onlink: flags.includes("onlink"),
    };
    hops.push(gateway === undefined ? hop : { gateway, ...hop });
  }
  return hops.length ? hops : undefined;
}

/** Whether a route object has anything for ROUTE_ATTRS to read (most have nothing). */
function mayHaveAttrs(r: Json): boolean {
  return (
    r.metrics !== undefined ||
    r.flow !== undefined ||
    r.expires !== undefined ||
    r.locks !== undefined ||
    (r.pref !== undefined && r.pref !== "medium")
  );
}

function parseFullRoute(r: Json): Route | undefined {
  const rawDst = str(r.dst);
  if (rawDst === undefined) return undefined;
  const table = parseTable(str(r.table) ?? "main");
  if (table === undefined) return undefined;
  const nhid = typeof r.nhid === "number" ? r.nhid : undefined;
  // The gateway a route by a nexthop object shows is the object's (of either family).
  const family = routeFamily(nhid === undefined ? r : { ...r, gateway: undefined }, rawDst);
  const dst = parseDst(rawDst, family);
  if (dst === undefined) return undefined;
  const type = str(r.type) ?? DEFAULT_ROUTE_TYPE;
  const flags = Array.isArray(r.flags) ? r.flags : [];
  const metrics = firstObject(r.metrics);
  // A route by a nexthop object shows that object's paths too: they are the object's, not the route's.
  const hops = nhid === undefined ? hopsOf(r.nexthops, family) : undefined;
  const gateway = nhid === undefined && !hops ? gatewayOf(r, family) : undefined;
  let dev = nhid === undefined && !hops ? (str(r.dev) ?? "") : "";
  // IPv6 files routes through no link under lo; a local (or anycast, ...) route through lo is one.
  if (LINKLESS_ROUTE_TYPES.has(type) && dev === LOOPBACK && family === 6) dev = "";
  // In the order the Kata-era parser built them (the oracle test compares JSON texts).
  const route: Route = {
    family,
    dst,
    ...(gateway !== undefined ? { gateway } : {}),
    dev,
    ...(typeof r.prefsrc === "string" ? { prefsrc: r.prefsrc } : {}),
    scope: parseScope(r.scope),
    metric: typeof r.metric === "number" ? r.metric : 0,
    onlink: nhid === undefined && !hops && flags.includes("onlink"),
    mtu: typeof metrics?.mtu === "number" ? metrics.mtu : 0,
    protocol: r.protocol === undefined ? DEFAULT_PROTOCOL : String(r.protocol),
    type,
    table,
  };
  const tos = parseTos(r.tos);
  if (tos) route.tos = tos;
  const from = typeof r.from === "string" && family === 6 ? canonicalDst(r.from, 6) : undefined;
  if (from !== undefined && from !== "::/0") route.from = from;
  if (hops) route.hops = hops;
  if (nhid !== undefined) route.nhid = nhid;
  if (mayHaveAttrs(r)) {
    const attrs = readAttrs(ROUTE_ATTRS, r).filter(
      ([n]) => (ROUTE_ATTRS.get(n)?.family ?? family) === family,
    );
    if (attrs.length) route.attrs = attrs;
  }
  return route;
}

/**
 * What an `ip -d -j route` object has that the model does not carry, as
 * `key` or `metrics.key` (an empty list when it carries everything): for
 * the reports of what a mirror left out. Keys that legitimately differ by
 * themselves (route-attrs.ts ROUTE_JSON_KEYS) are not listed.
 */
export function routeKeysNotCarried(r: Json): string[] {
  const out = Object.keys(r).filter((k) => !ROUTE_JSON_KEYS.has(k));
  const m = firstObject(r.metrics);
  if (m) for (const k of Object.keys(m)) if (!METRIC_JSON_KEYS.has(k)) out.push(`metrics.${k}`);
  if (r.tos !== undefined && parseTos(r.tos) === undefined) out.push("tos");
  if (r.flow !== undefined && ROUTE_ATTRS.get("realms")?.read(r) === undefined) out.push("flow");
  for (const h of asArray(r.nexthops)) {
    for (const k of Object.keys(h)) {
      if (!["gateway", "via", "dev", "weight", "flags"].includes(k)) out.push(`nexthops.${k}`);
    }
  }
  return out;
}

/**
 * Adds each route's locked metrics (`locks`, names) to the objects of
 * `doc` from the text dump of the same routes (`ip -d route show table
 * all`, which alone prints `lock`): line by line, a route per line not
 * starting with white space. False when the two do not line up (the
 * table changed between the reads): read both again.
 */
export function addLocks(doc: unknown, text: string): boolean {
  if (!Array.isArray(doc)) return false;
  const lines = text.split("\n").filter((l) => l !== "" && !/^\s/.test(l));
  if (lines.length !== doc.length) return false;
  for (let i = 0; i < doc.length; i++) {
    const r = doc[i] as Json;
    const line = lines[i] as string;
    if (!r || typeof r !== "object") return false;
    const dst = str(r.dst);
    const words = line.split(" ");
    if (dst === undefined || (words[0] !== dst && words[1] !== dst)) return false;
    const locks = locksOfLine(line);
    if (locks.length) r.locks = locks;
  }
  return true;
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
