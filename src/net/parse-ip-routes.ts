/**
 * Pure parsers of `ip -json -details route` output into the model. Unknown
 * or malformed entries are skipped, never thrown on.
 */
import { type Family, familyOf } from "./address";
import { asArray, firstObject, type Json, str } from "./json-fields";
import { makeRoute, type Route } from "./model";
import { LOOPBACK } from "./vocabulary/links";
import {
  canonicalDst,
  DEFAULT_PROTOCOL,
  DEFAULT_ROUTE_TYPE,
  parseScope,
  parseTable,
} from "./vocabulary/routes";

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
