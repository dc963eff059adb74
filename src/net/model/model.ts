/**
 * The agent's own vocabulary for the guest network. Protobuf types stop at
 * the proto mapping and iproute2's JSON at the parser; the middle speaks this.
 */

import type { Attr } from "../vocabulary/attrs";
import { ROUTE_ATTRS } from "../vocabulary/route-attrs";
import type { Tuntap } from "../vocabulary/tuntap";
import type { Family } from "./address";

export type { Attr };

/** One path of a multipath route (RTA_MULTIPATH). */
export interface Hop {
  /** Absent for a path through the link alone; of either family for an IPv4 route. */
  gateway?: string;
  dev: string;
  /** 1-256. */
  weight: number;
  onlink: boolean;
}

/** A route; of the main table unless `table` says otherwise. */
export interface Route {
  family: Family;
  /** Routing table id (254 main, 255 local); absent means main. */
  table?: number;
  /** Canonical CIDR with host bits clear; default is "0.0.0.0/0" or "::/0". */
  dst: string;
  gateway?: string;
  /** Output link name; "" for routes without one (unreachable, blackhole). */
  dev: string;
  /** Preferred source address. */
  prefsrc?: string;
  /** rtm_scope: 0 universe, 253 link, 254 host. */
  scope: number;
  /** Priority; IPv4 default 0, IPv6 default 1024, IPv6 kernel prefix routes 256. */
  metric: number;
  onlink: boolean;
  /** RTAX_MTU, 0 when unset. */
  mtu: number;
  /** "kernel", "boot", "static", ... or a number as text. */
  protocol: string;
  /** "unicast", "unreachable", "blackhole", "local", ... */
  type: string;
  /** IPv4: the TOS (dsfield) it matches, part of its key; absent is 0. */
  tos?: number;
  /** IPv6: the source prefix it matches (`from`, a canonical CIDR), part of its key. */
  from?: string;
  /** Multipath: its paths in the kernel's order; `gateway` and `dev` are then unset (""). */
  hops?: Hop[];
  /** A nexthop object (`nhid`) instead of a gateway, link or paths. */
  nhid?: number;
  /** Everything else, canonical: vocabulary/route-attrs.ts. */
  attrs?: Attr[];
}

/** A nexthop object (`ip nexthop`): a single one, a blackhole, or a group of others. */
export interface Nexthop {
  id: number;
  /** Of the gateway (or as created, without one); 0 for a group. */
  family: Family | 0;
  gateway?: string;
  /** "" for a group or a blackhole. */
  dev: string;
  onlink: boolean;
  blackhole: boolean;
  /** The members of a group, in order; weight 1-256. */
  group?: { id: number; weight: number }[];
  /** As for routes: "unspec" when none was given. */
  protocol: string;
  /** vocabulary/nexthop-attrs.ts. */
  attrs?: Attr[];
}

export interface Address {
  family: Family;
  address: string;
  prefix: number;
  /** "global", "link", "host", ... */
  scope: string;
  /** Added with `noprefixroute`: the kernel made no prefix route for it. */
  noprefixroute?: boolean;
  /** The other end of a point-to-point address (`peer P/prefix`); `prefix` is the peer's. */
  peer?: string;
  /** An IPv4 address in the subnet of an earlier one on its link: no route of its own. */
  secondary?: boolean;
  /** `metric N` on the address: the metric of its prefix route. */
  metric?: number;
  /** Everything else, canonical (vocabulary/address-attrs.ts): broadcast, label, lifetimes, flags. */
  attrs?: Attr[];
  /** What `ip` showed that is not carried (read only), as `key=value`. */
  other?: string[];
}

export interface Link {
  index: number;
  name: string;
  /** Lower-case MAC, "" for links without one. */
  mac: string;
  mtu: number;
  /** IFF_* flags as iproute2 names them (UP, NOARP, LOWER_UP, ...). */
  flags: string[];
  /** rtnl link kind ("veth", "virtio"?) when known, else "". */
  kind: string;
  addresses: Address[];
  /** txqueuelen, promisc, allmulticast, group, alias (vocabulary/link-attrs.ts): a read has them all. */
  attrs?: Attr[];
  /** A tun or tap device's settings (kind "tun"). */
  tuntap?: Tuntap;
}

/**
 * IPv6's least MTU (RFC 8200 section 5): below it the kernel takes IPv6
 * off a link, its addresses, routes and neighbours.
 */
export const IPV6_MIN_MTU = 1280;

export interface Neighbor {
  family: Family;
  ip: string;
  dev: string;
  lladdr: string;
  /** NUD state names as iproute2 prints them (PERMANENT, REACHABLE, ...). */
  state: string[];
  router: boolean;
  /** proxy (a proxy entry: no MAC, no state), extern_learn (vocabulary/neighbor-attrs.ts). */
  attrs?: Attr[];
}

export interface NetState {
  links: Link[];
  routes: Route[];
  neighbors: Neighbor[];
}

/**
 * A main-table route with the fields in the model's order, `gateway` and
 * `prefsrc` present only when given: object literals, not spreads (a
 * spread is a copy per route, and a table has thousands).
 */
export function makeRoute(
  family: Family,
  dst: string,
  gateway: string | undefined,
  dev: string,
  prefsrc: string | undefined,
  scope: number,
  metric: number,
  onlink: boolean,
  mtu: number,
  protocol: string,
  type: string,
): Route {
  if (gateway !== undefined) {
    return prefsrc !== undefined
      ? { family, dst, gateway, dev, prefsrc, scope, metric, onlink, mtu, protocol, type }
      : { family, dst, gateway, dev, scope, metric, onlink, mtu, protocol, type };
  }
  return prefsrc !== undefined
    ? { family, dst, dev, prefsrc, scope, metric, onlink, mtu, protocol, type }
    : { family, dst, dev, scope, metric, onlink, mtu, protocol, type };
}

/** The part of a route's key beyond family, dst and metric: IPv4's tos, IPv6's source prefix. */
export type KeyExtra = Pick<Route, "tos" | "from">;

/** The kernel's identity of a route within its table: what `replace` overwrites. */
export function routeKey(r: Pick<Route, "family" | "dst" | "metric"> & KeyExtra): string {
  const base = `${r.family} ${r.dst} ${r.metric}`;
  return r.tos || r.from ? `${base} tos ${r.tos ?? 0} from ${r.from ?? ""}` : base;
}

/** A multipath route's paths as text, for identities and messages. */
export function hopsText(hops: readonly Hop[] | undefined): string {
  if (!hops?.length) return "";
  return hops
    .map((h) => `nexthop ${h.gateway ?? ""} ${h.dev} ${h.weight}${h.onlink ? " onlink" : ""}`)
    .join(" ");
}

/** What identifies a route beyond the fields of the Kata era ("" for a route without any). */
function extraIdentity(r: Route): string {
  if (
    r.tos === undefined &&
    r.from === undefined &&
    r.hops === undefined &&
    r.nhid === undefined &&
    r.attrs === undefined
  )
    return "";
  const attrs = (r.attrs ?? [])
    .map(([n, v]) => (ROUTE_ATTRS.get(n)?.volatile ? n : `${n}=${v}`))
    .join(" ");
  return ` tos=${r.tos ?? 0} from=${r.from ?? ""} nhid=${r.nhid ?? 0} ${hopsText(r.hops)} ${attrs}`;
}

/** Every attribute that makes two routes the same route; protocol optional. */
export function routeIdentity(r: Route, withProtocol: boolean): string {
  // A template rather than [...].join(" "): same text, no array per call
  // (planRoutes keys every route of the table with it).
  return `${r.type} ${r.family} ${r.dst} ${r.gateway ?? ""} ${r.dev} ${r.prefsrc ?? ""} ${r.scope} ${r.metric} ${r.onlink ? 1 : 0} ${r.mtu} ${withProtocol ? r.protocol : ""}${extraIdentity(r)}`;
}

/** Whether a route goes through a gateway (its own, a path's, or a nexthop object's). */
export function hasGateway(r: Route): boolean {
  return (
    r.gateway !== undefined ||
    r.nhid !== undefined ||
    (r.hops?.some((h) => h.gateway !== undefined) ?? false)
  );
}

/** Every link a route goes through (none for a route by a nexthop object, or through no link). */
export function routeDevs(r: Route): string[] {
  if (r.hops) return r.hops.map((h) => h.dev);
  return r.dev ? [r.dev] : [];
}

/** A route as `ip route` would print it, for messages. */
export function describeRoute(r: Route): string {
  const parts = [r.type === "unicast" ? "" : r.type, r.dst];
  if (r.tos) parts.push("tos", `0x${r.tos.toString(16).padStart(2, "0")}`);
  if (r.from) parts.push("from", r.from);
  if (r.nhid !== undefined) parts.push("nhid", String(r.nhid));
  if (r.gateway) parts.push("via", r.gateway);
  if (r.dev) parts.push("dev", r.dev);
  for (const h of r.hops ?? []) {
    parts.push("nexthop");
    if (h.gateway) parts.push("via", h.gateway);
    parts.push("dev", h.dev, "weight", String(h.weight));
    if (h.onlink) parts.push("onlink");
  }
  if (r.prefsrc) parts.push("src", r.prefsrc);
  if (r.metric) parts.push("metric", String(r.metric));
  return parts.filter(Boolean).join(" ");
}
