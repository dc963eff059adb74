/**
 * The agent's own vocabulary for the guest network. Protobuf types stop at
 * the proto mapping and iproute2's JSON at the parser; the middle speaks this.
 */
import type { Family } from "./address";

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
  /** "unicast", "unreachable", "blackhole", ... */
  type: string;
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
}

export interface Neighbor {
  family: Family;
  ip: string;
  dev: string;
  lladdr: string;
  /** NUD state names as iproute2 prints them (PERMANENT, REACHABLE, ...). */
  state: string[];
  router: boolean;
}

export interface NetState {
  links: Link[];
  routes: Route[];
  neighbors: Neighbor[];
}

/**
 * A main-table route with the fields in the model's order, `gateway` and
 * `prefsrc` present only when given: object literals, not spreads (a
 * spread's copy per route showed over 10,000 routes).
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

/** The kernel's identity of a main-table route: what `replace` overwrites. */
export function routeKey(r: Pick<Route, "family" | "dst" | "metric">): string {
  return `${r.family} ${r.dst} ${r.metric}`;
}

/** Every attribute that makes two routes the same route; protocol optional. */
export function routeIdentity(r: Route, withProtocol: boolean): string {
  // A template rather than [...].join(" "): same text, no array per call
  // (planRoutes keys every route of the table with it).
  return `${r.type} ${r.family} ${r.dst} ${r.gateway ?? ""} ${r.dev} ${r.prefsrc ?? ""} ${r.scope} ${r.metric} ${r.onlink ? 1 : 0} ${r.mtu} ${withProtocol ? r.protocol : ""}`;
}

/** A route as `ip route` would print it, for messages. */
export function describeRoute(r: Route): string {
  const parts = [r.type === "unicast" ? "" : r.type, r.dst];
  if (r.gateway) parts.push("via", r.gateway);
  if (r.dev) parts.push("dev", r.dev);
  if (r.prefsrc) parts.push("src", r.prefsrc);
  if (r.metric) parts.push("metric", String(r.metric));
  return parts.filter(Boolean).join(" ");
}
