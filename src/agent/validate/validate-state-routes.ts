/**
 * The routes and nexthop objects of a netagent.v1 Apply request: wire in,
 * model out (validate-state.ts calls this). Every failure is
 * INVALID_ARGUMENT naming the field and the value; attribute names and
 * values are checked against their table (src/net/vocabulary/route-attrs.ts,
 * nexthop-attrs.ts), so nothing unchecked reaches a batch line.
 */
import type {
  Hop as WireHop,
  Nexthop as WireNexthop,
  Route as WireRoute,
} from "../../gen/network_pb";
import { defaultDst, type Family } from "../../net/model/address";
import type { Hop, Nexthop, Route } from "../../net/model/model";
import { isManagedLink } from "../../net/vocabulary/links";
import { GROUP_ONLY_ATTRS, NEXTHOP_ATTRS } from "../../net/vocabulary/nexthop-attrs";
import { lockedNames, ROUTE_ATTRS } from "../../net/vocabulary/route-attrs";
import {
  DEFAULT_PROTOCOL,
  DEFAULT_V6_METRIC,
  isRouteProtocol,
  LINKLESS_ROUTE_TYPES,
  NEXTHOP_DEFAULT_PROTOCOL,
  SCOPE_UNIVERSE,
  TABLE_MAIN,
} from "../../net/vocabulary/routes";
import { ROUTE_TYPE_NAMES } from "../../wire/state-map";
import { attrsFromWire } from "./validate-attrs";
import {
  bounded,
  cidr,
  invalid,
  mtuOrZero,
  stateFamily,
  validateName,
  validIp,
} from "./validate-fields";
import { sameKey, twinOf } from "./validate-route-twins";
import { PlainChecks, plainRoute } from "./validate-state-fast";

/** Bounds of the route part of a request (docs/limits.md). */
export const ROUTE_LIMITS = {
  nexthops: 10_000,
  /** Paths of one multipath route. */
  hops: 256,
  /** Members of one nexthop group. */
  groupMembers: 256,
} as const;

const MAX_WEIGHT = 256;

function gatewayOf(f: string, value: string, fam: Family): string | undefined {
  // An IPv4 route may go via an IPv6 gateway (RFC 5549); an IPv6 one only via IPv6.
  const gw = value ? validIp(f, value, fam === 6 ? 6 : undefined) : undefined;
  if (gw && (gw.family === 4 ? gw.bytes[0] === 127 : gw.text === "::1"))
    throw invalid(f, value, "is a loopback address (no gateway)");
  if (gw && (gw.family === 4 ? (gw.bytes[0] as number) >= 224 : gw.bytes[0] === 0xff))
    throw invalid(f, value, "is a multicast or broadcast address (no gateway)");
  return gw?.bytes.some((b) => b !== 0) ? gw.text : undefined;
}

function hop(f: string, h: WireHop, fam: Family): Hop {
  validateName(`${f}.device`, h.device);
  if (!isManagedLink(h.device)) throw invalid(`${f}.device`, h.device, "is not managed (loopback)");
  const gateway = gatewayOf(`${f}.gateway`, h.gateway, fam);
  if (h.family !== 0 && h.family !== (gateway?.includes(":") ? 6 : 4))
    throw invalid(`${f}.family`, h.family, "does not match its gateway");
  if (h.weight > MAX_WEIGHT) throw invalid(`${f}.weight`, h.weight, `is above ${MAX_WEIGHT}`);
  const out: Hop = { dev: h.device, weight: h.weight || 1, onlink: h.onlink };
  return gateway === undefined ? out : { gateway, ...out };
}

/** One route of the request in the model (the checks that need the others come after). */
function routeFromWire(f: string, r: WireRoute): Route {
  const type = ROUTE_TYPE_NAMES[r.type];
  if (type === undefined) throw invalid(`${f}.type`, r.type, "is not a route type (0-9)");
  const hopGateways = r.hops.map((h) => h.gateway);
  // The gateways tell the family only of a route that says nothing else (IPv4 may go via IPv6).
  const fam = stateFamily(`${f}.family`, r.family, [
    r.dest.split("/")[0] as string,
    r.source,
    r.from.split("/")[0] as string,
    ...(r.family === 0 ? [r.gateway, ...hopGateways] : []),
  ]);
  const dst = r.dest === "" ? defaultDst(fam) : cidr(`${f}.dest`, r.dest, fam);
  const gateway = gatewayOf(`${f}.gateway`, r.gateway, fam);
  const prefsrc = r.source ? validIp(`${f}.source`, r.source, fam).text : undefined;
  if (r.device !== "") validateName(`${f}.device`, r.device);
  if (!isManagedLink(r.device)) throw invalid(`${f}.device`, r.device, "is not managed (loopback)");
  bounded(`${f}.hops`, r.hops, ROUTE_LIMITS.hops);
  let hops = r.hops.map((h, i) => hop(`${f}.hops[${i}]`, h, fam));
  const nhid = r.nhid === 0 ? undefined : r.nhid;
  const linkless = LINKLESS_ROUTE_TYPES.has(type);
  if (hops.length > 0) {
    if (type !== "unicast")
      throw invalid(`${f}.hops`, hops.length, `are given for a ${type} route`);
    if (r.gateway || r.device || r.onlink)
      throw invalid(
        `${f}.hops`,
        hops.length,
        "are given with the route's own gateway, device or onlink",
      );
  }
  if (nhid !== undefined) {
    if (type !== "unicast" && type !== "blackhole")
      throw invalid(`${f}.nhid`, nhid, `is given for a ${type} route`);
    if (r.gateway || r.device || hops.length || r.onlink)
      throw invalid(`${f}.nhid`, nhid, "is given with a gateway, device, paths or onlink");
    if (r.from) throw invalid(`${f}.nhid`, nhid, "is given for a source-specific (from) route");
  } else if (linkless && gateway) {
    throw invalid(`${f}.gateway`, r.gateway, `is given for a ${type} route`);
  } else if (linkless && r.device) {
    throw invalid(`${f}.device`, r.device, `is given for a ${type} route`);
  } else if (!linkless && r.device === "" && hops.length === 0) {
    throw invalid(`${f}.device`, r.device, `is empty: a ${type} route needs a link`);
  }
  if (type !== "unicast" && gateway)
    throw invalid(`${f}.gateway`, r.gateway, `is given for a ${type} route`);
  if (r.scope > 255) throw invalid(`${f}.scope`, r.scope, "is not a scope (0-255)");
  const protocol = r.protocol === "" ? DEFAULT_PROTOCOL : r.protocol;
  if (!isRouteProtocol(protocol))
    throw invalid(
      `${f}.protocol`,
      r.protocol,
      "is not a route protocol (a name iproute2 knows, or 0-255)",
    );
  if (r.tos !== 0) {
    if (fam === 6)
      throw invalid(`${f}.tos`, r.tos, "is given for an IPv6 route (dsfield is IPv4's)");
    if (r.tos > 255 || (r.tos & 3) !== 0)
      throw invalid(`${f}.tos`, r.tos, "is not a TOS (0-255, the two ECN bits clear)");
  }
  if (r.from && fam === 4) throw invalid(`${f}.from`, r.from, "is given for an IPv4 route");
  const from = r.from ? cidr(`${f}.from`, r.from, 6) : undefined;
  const attrList = attrsFromWire(f, r.attrs, ROUTE_ATTRS, fam);
  const routeMtu = mtuOrZero(`${f}.mtu`, r.mtu);
  for (const name of attrList ? lockedNames(attrList) : []) {
    const set = name === "mtu" ? routeMtu !== 0 : attrList?.some(([n]) => n === name);
    if (!set) throw invalid(`${f}.attrs`, "lock", `names ${name}, which the route does not set`);
  }
  // One path is a plain route to the kernel (it shows no paths then, and no weight).
  let single: Hop | undefined;
  if (hops.length === 1) {
    single = hops[0];
    hops = [];
  }
  const out: Route = {
    family: fam,
    table: r.table === 0 ? TABLE_MAIN : r.table,
    dst,
    ...(gateway || single?.gateway ? { gateway: gateway ?? single?.gateway } : {}),
    dev: single?.dev ?? r.device,
    ...(prefsrc ? { prefsrc } : {}),
    // IPv6 routes have no scope: the kernel keeps universe whatever is asked.
    scope: fam === 4 ? r.scope : SCOPE_UNIVERSE,
    metric: fam === 6 && r.metric === 0 ? DEFAULT_V6_METRIC : r.metric,
    onlink: single?.onlink ?? r.onlink,
    mtu: routeMtu,
    protocol,
    type,
  };
  if (r.tos) out.tos = r.tos;
  if (from && !from.endsWith("/0")) out.from = from;
  if (hops.length) out.hops = hops;
  if (nhid !== undefined) out.nhid = nhid;
  if (attrList) out.attrs = attrList;
  return out;
}

/** One nexthop object of the request in the model. */
function nexthopFromWire(f: string, n: WireNexthop): Nexthop {
  if (n.id === 0) throw invalid(`${f}.id`, n.id, "is not a nexthop id (1-4294967295)");
  bounded(`${f}.group`, n.group, ROUTE_LIMITS.groupMembers);
  const isGroup = n.group.length > 0;
  if (n.family !== 0 && n.family !== 4 && n.family !== 6)
    throw invalid(`${f}.family`, n.family, "is not a family (0 = from the gateway, 4, 6)");
  const gw = n.gateway ? validIp(`${f}.gateway`, n.gateway) : undefined;
  if (gw && n.family !== 0 && gw.family !== n.family)
    throw invalid(`${f}.gateway`, n.gateway, `is IPv${gw.family} in an IPv${n.family} entry`);
  if (n.device !== "") {
    validateName(`${f}.device`, n.device);
    if (!isManagedLink(n.device))
      throw invalid(`${f}.device`, n.device, "is not managed (loopback)");
  }
  if (isGroup && (n.gateway || n.device || n.blackhole || n.onlink))
    throw invalid(
      `${f}.group`,
      n.group.length,
      "is given with a gateway, device, blackhole or onlink",
    );
  if (n.blackhole && (n.gateway || n.device || n.onlink))
    throw invalid(`${f}.blackhole`, true, "is given with a gateway, device or onlink");
  if (!isGroup && !n.blackhole && n.device === "")
    throw invalid(
      `${f}.device`,
      n.device,
      "is empty: a nexthop needs a link (or is a blackhole or group)",
    );
  const ids = new Set<number>();
  const group = n.group.map((m, i) => {
    const mf = `${f}.group[${i}]`;
    if (m.id === 0 || m.id === n.id) throw invalid(`${mf}.id`, m.id, "is not another nexthop's id");
    if (ids.has(m.id)) throw invalid(`${mf}.id`, m.id, "is listed twice");
    ids.add(m.id);
    if (m.weight > MAX_WEIGHT) throw invalid(`${mf}.weight`, m.weight, `is above ${MAX_WEIGHT}`);
    return { id: m.id, weight: m.weight || 1 };
  });
  const protocol = n.protocol === "" ? NEXTHOP_DEFAULT_PROTOCOL : n.protocol;
  if (protocol !== NEXTHOP_DEFAULT_PROTOCOL && !isRouteProtocol(protocol))
    throw invalid(
      `${f}.protocol`,
      n.protocol,
      "is not a protocol (a name iproute2 knows, or 0-255)",
    );
  const fam: Family | 0 = isGroup ? 0 : (gw?.family ?? (n.family === 6 ? 6 : 4));
  const attrList = attrsFromWire(f, n.attrs, NEXTHOP_ATTRS);
  for (const [name] of attrList ?? []) {
    if (GROUP_ONLY_ATTRS.has(name) && !isGroup)
      throw invalid(`${f}.attrs`, name, "is for a group only");
  }
  const resilient = attrList?.some(([k, v]) => k === "type" && v === "resilient");
  for (const [name] of attrList ?? []) {
    if (name !== "type" && GROUP_ONLY_ATTRS.has(name) && !resilient)
      throw invalid(`${f}.attrs`, name, "is for a resilient group only (type resilient)");
  }
  const out: Nexthop = {
    id: n.id,
    family: fam,
    ...(gw ? { gateway: gw.text } : {}),
    dev: n.device,
    onlink: n.onlink,
    blackhole: n.blackhole,
    ...(isGroup ? { group } : {}),
    protocol,
  };
  if (attrList) out.attrs = attrList;
  return out;
}

/**
 * The request's routes and nexthop objects, checked together: each object
 * once, groups of existing single objects, routes by existing objects of
 * their family. Exact duplicate routes are dropped. Two routes with one
 * key are what `ip route append` makes and are kept, in order; but IPv6
 * joins two with a gateway into one multipath route (and refuses two on
 * one link without one), so those are refused.
 */
export function routesFromWire(
  wireRoutes: readonly WireRoute[],
  wireNexthops: readonly WireNexthop[],
  maxRoutes: number,
): { routes: Route[]; nexthops: Nexthop[] } {
  const nexthops: Nexthop[] = [];
  const byId = new Map<number, Nexthop>();
  bounded("desired.nexthops", wireNexthops, ROUTE_LIMITS.nexthops).forEach((w, i) => {
    const n = nexthopFromWire(`desired.nexthops[${i}]`, w);
    if (byId.has(n.id)) throw invalid(`desired.nexthops[${i}].id`, n.id, "is listed twice");
    byId.set(n.id, n);
    nexthops.push(n);
  });
  nexthops.forEach((n, i) => {
    (n.group ?? []).forEach((m, k) => {
      const member = byId.get(m.id);
      const mf = `desired.nexthops[${i}].group[${k}].id`;
      if (!member) throw invalid(mf, m.id, "is not a nexthop of the request");
      if (member.group) throw invalid(mf, m.id, "is a group (groups hold single nexthops)");
    });
  });
  const routes: Route[] = [];
  /** The request index of each route kept, for messages. */
  const from: number[] = [];
  // Routes kept by destination: those of one key (table, family,
  // destination, metric, tos, from) are found among them, no key string
  // built per route.
  const byDst = new Map<string, number[]>();
  const checks = new PlainChecks();
  const list = bounded("desired.routes", wireRoutes, maxRoutes);
  for (let n = 0; n < list.length; n++) {
    const w = list[n] as WireRoute;
    const f = () => `desired.routes[${n}]`;
    const m = plainRoute(w, checks) ?? routeFromWire(f(), w);
    if (m.nhid !== undefined) {
      const nh = byId.get(m.nhid);
      if (!nh) throw invalid(`${f()}.nhid`, m.nhid, "is not a nexthop of the request");
      const families = nh.group ? nh.group.map((g) => byId.get(g.id)?.family) : [nh.family];
      if (m.family === 6 && families.some((x) => x !== 6))
        throw invalid(`${f()}.nhid`, m.nhid, "is not IPv6 (IPv6 routes take IPv6 nexthops only)");
    }
    const sameDst = byDst.get(m.dst);
    const twins = sameDst?.filter((t) => sameKey(routes[t] as Route, m));
    if (twins !== undefined && twins.length > 0) {
      if (
        twinOf(
          m,
          twins,
          routes,
          (t) => from[t] as number,
          () => w.dest || m.dst,
          f,
        )
      )
        continue;
    }
    if (sameDst) sameDst.push(routes.length);
    else byDst.set(m.dst, [routes.length]);
    from.push(n);
    routes.push(m);
  }
  return { routes, nexthops };
}
