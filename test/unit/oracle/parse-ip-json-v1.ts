/**
 * The parser of `ip -json` output as it was before the line splitter and
 * the allocation-free route list (commit ac181c7: src/net/parse-ip-json.ts,
 * with canonicalDst of src/net/vocabulary/routes.ts): the oracle the faster
 * parser is held to (parse-ip-json-oracle.test.ts). Not used by the agent.
 */
import {
  defaultDst,
  type Family,
  familyOf,
  maxPrefix,
  networkText,
  parseIp,
} from "../../../src/net/model/address";
import type { Address, Link, Neighbor, Route } from "../../../src/net/model/model";
import { parseTable } from "../../../src/net/vocabulary/routes";

type Json = Record<string, unknown>;

const SCOPES: Record<string, number> = {
  global: 0,
  universe: 0,
  site: 200,
  link: 253,
  host: 254,
  nowhere: 255,
};

/** Splits the concatenated top-level JSON values that `ip -json -batch` prints. */
export function splitJsonDocuments(text: string): unknown[] {
  const docs: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (depth++ === 0) start = i;
    } else if (c === 0x5d || c === 0x7d) {
      if (--depth === 0) docs.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  if (depth !== 0) throw new SyntaxError("truncated JSON from ip");
  return docs;
}

function asArray(doc: unknown): Json[] {
  return Array.isArray(doc) ? (doc.filter((x) => x && typeof x === "object") as Json[]) : [];
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
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

function parseScope(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "string") return SCOPES[v] ?? (/^\d+$/.test(v) ? Number(v) : 0);
  return 0;
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
  return parseRouteList(doc, knownFamily, (table) => table === undefined || table === "main").map(
    (e) => e.route,
  );
}

/**
 * Routes of every table from `ip -json -details route show table all`, each
 * with its numeric `table`. The kernel files IPv6 blackhole, unreachable and
 * prohibit routes under `lo`; here they have no device, as they are written.
 */
export function parseAllTableRoutes(doc: unknown): Route[] {
  const out: Route[] = [];
  for (const { route: r, table: name } of parseRouteList(doc, undefined, () => true)) {
    const table = parseTable(name ?? "main");
    if (table === undefined) continue;
    out.push({
      ...r,
      table,
      dev: r.type !== "unicast" && r.dev === "lo" && r.family === 6 ? "" : r.dev,
    });
  }
  return out;
}

function parseRouteList(
  doc: unknown,
  knownFamily: Family | undefined,
  keep: (table: string | undefined) => boolean,
): { route: Route; table: string | undefined }[] {
  const routes: { route: Route; table: string | undefined }[] = [];
  for (const r of asArray(doc)) {
    const rawDst = str(r.dst);
    if (rawDst === undefined) continue;
    const family = knownFamily ?? routeFamily(r, rawDst);
    const dst = parseDst(rawDst, family);
    if (dst === undefined) continue;
    const table = str(r.table);
    if (!keep(table)) continue;
    const flags = Array.isArray(r.flags) ? r.flags : [];
    const metrics = asArray(r.metrics)[0];
    const gateway = str(r.gateway);
    const prefsrc = str(r.prefsrc);
    let dev = str(r.dev) ?? "";
    if (!dev) dev = str(asArray(r.nexthops)[0]?.dev) ?? "";
    const route: Route = {
      family,
      dst,
      ...(gateway !== undefined && familyOf(gateway) === family ? { gateway } : {}),
      dev,
      ...(prefsrc !== undefined ? { prefsrc } : {}),
      scope: parseScope(r.scope),
      metric: typeof r.metric === "number" ? r.metric : 0,
      onlink: flags.includes("onlink"),
      mtu: typeof metrics?.mtu === "number" ? metrics.mtu : 0,
      protocol: r.protocol === undefined ? "boot" : String(r.protocol),
      type: str(r.type) ?? "unicast",
    };
    routes.push({ route, table });
  }
  return routes;
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

/**
 * A destination as a canonical CIDR: "" and "default" are the family's
 * default, a bare address is a host route, host bits are cleared.
 * Undefined when it is not an address or prefix of that family.
 */
export function canonicalDst(dest: string, family: Family): string | undefined {
  if (dest === "" || dest === "default") return defaultDst(family);
  const slash = dest.indexOf("/");
  const ip = parseIp(slash < 0 ? dest : dest.slice(0, slash));
  if (typeof ip === "string" || ip.family !== family) return undefined;
  const len = slash < 0 ? String(maxPrefix(family)) : dest.slice(slash + 1);
  if (!/^\d{1,3}$/.test(len) || Number(len) > maxPrefix(family)) return undefined;
  return `${networkText(ip.bytes, Number(len))}/${len}`;
}
