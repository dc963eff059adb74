/**
 * The model to netagent.v1 wire shapes, for both sides: the agent answers
 * Get and Apply with it, the host builds Apply requests from a pod read
 * with it. (Wire to model, with validation, is src/agent/validate/validate-state.ts.)
 */

import { create } from "@bufbuild/protobuf";
import {
  type Interface,
  InterfaceSchema,
  NeighborSchema,
  NexthopSchema,
  type Neighbor as ProtoNeighbor,
  type Nexthop as ProtoNexthop,
  type Route as ProtoRoute,
  type Rule as ProtoRule,
  RouteSchema,
  RouteType,
  RuleAction,
  RuleSchema,
  type State,
  StateSchema,
} from "../gen/network_pb";
import { familyOf } from "../net/model/address";
import { addressAttrList } from "../net/model/address-attrs";
import type { Sysctl } from "../net/model/full-state";
import {
  type Attr,
  type Link,
  type Neighbor,
  type Nexthop,
  type Route,
  routeDevs,
} from "../net/model/model";
import type { Rule } from "../net/plan/rules";
import { isManagedLink } from "../net/vocabulary/links";
import { isProxy } from "../net/vocabulary/neighbor-attrs";
import { NEXTHOP_DEFAULT_PROTOCOL, TABLE_LOCAL, TABLE_MAIN } from "../net/vocabulary/routes";

export const ROUTE_TYPES: Record<string, RouteType> = {
  unicast: RouteType.UNICAST,
  blackhole: RouteType.BLACKHOLE,
  unreachable: RouteType.UNREACHABLE,
  prohibit: RouteType.PROHIBIT,
  throw: RouteType.THROW,
  local: RouteType.LOCAL,
  broadcast: RouteType.BROADCAST,
  anycast: RouteType.ANYCAST,
  multicast: RouteType.MULTICAST,
  nat: RouteType.NAT,
};

export const ROUTE_TYPE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(ROUTE_TYPES).map(([k, v]) => [v, k]),
);

const RULE_ACTIONS: Record<Rule["action"], RuleAction> = {
  lookup: RuleAction.LOOKUP,
  blackhole: RuleAction.BLACKHOLE,
  unreachable: RuleAction.UNREACHABLE,
  prohibit: RuleAction.PROHIBIT,
};

export const RULE_ACTION_NAMES: Record<number, Rule["action"]> = {
  [RuleAction.LOOKUP]: "lookup",
  [RuleAction.BLACKHOLE]: "blackhole",
  [RuleAction.UNREACHABLE]: "unreachable",
  [RuleAction.PROHIBIT]: "prohibit",
};

/** Whether a route is part of the state: not the kernel's own in table local, of a type the wire names, not through lo. */
export function isStateRoute(r: Route): boolean {
  if ((r.table ?? TABLE_MAIN) === TABLE_LOCAL && r.protocol === "kernel") return false;
  if (!(r.type in ROUTE_TYPES)) return false;
  return routeDevs(r).every(isManagedLink);
}

const attrsToWire = (attrs: readonly Attr[] | undefined) =>
  (attrs ?? []).map(([name, value]) => ({ name, value }));

function linkToWire(l: Link): Interface {
  return create(InterfaceSchema, {
    mac: l.mac,
    name: l.name,
    mtu: l.mtu,
    addresses: l.addresses.map((a) => ({
      address: a.address,
      prefix: a.prefix,
      attrs: addressAttrList(a).map(([name, value]) => ({ name, value })),
    })),
    noarp: l.flags.includes("NOARP"),
    up: l.flags.includes("UP"),
    attrs: (l.attrs ?? []).map(([name, value]) => ({ name, value })),
    ...(l.tuntap
      ? {
          tuntap: {
            mode: l.tuntap.mode,
            multiQueue: l.tuntap.multiQueue,
            pi: l.tuntap.pi,
            vnetHdr: l.tuntap.vnetHdr,
            persist: l.tuntap.persist,
            ...(l.tuntap.user === undefined ? {} : { user: l.tuntap.user }),
            ...(l.tuntap.group === undefined ? {} : { group: l.tuntap.group }),
          },
        }
      : {}),
  });
}

export function routeToWire(r: Route): ProtoRoute {
  // The common route (no paths, no attributes) as the literal create()
  // builds (every field, declaration order): a state answers thousands.
  if (r.hops === undefined && r.attrs === undefined) {
    return {
      $typeName: RouteSchema.typeName,
      table: r.table ?? TABLE_MAIN,
      family: r.family ?? 0,
      dest: r.dst ?? "",
      gateway: r.gateway ?? "",
      device: r.dev ?? "",
      source: r.prefsrc ?? "",
      metric: r.metric ?? 0,
      type: ROUTE_TYPES[r.type] ?? RouteType.UNICAST,
      scope: r.scope ?? 0,
      onlink: r.onlink ?? false,
      mtu: r.mtu ?? 0,
      protocol: r.protocol ?? "",
      attrs: [],
      hops: [],
      nhid: r.nhid ?? 0,
      tos: r.tos ?? 0,
      from: r.from ?? "",
    };
  }
  return create(RouteSchema, {
    table: r.table ?? TABLE_MAIN,
    family: r.family,
    dest: r.dst,
    gateway: r.gateway ?? "",
    device: r.dev,
    source: r.prefsrc ?? "",
    metric: r.metric,
    type: ROUTE_TYPES[r.type] ?? RouteType.UNICAST,
    scope: r.scope,
    onlink: r.onlink,
    mtu: r.mtu,
    protocol: r.protocol,
    attrs: attrsToWire(r.attrs),
    hops: (r.hops ?? []).map((h) => ({
      gateway: h.gateway ?? "",
      device: h.dev,
      weight: h.weight,
      onlink: h.onlink,
      family: h.gateway ? familyOf(h.gateway) : 0,
    })),
    nhid: r.nhid ?? 0,
    tos: r.tos ?? 0,
    from: r.from ?? "",
  });
}

function nexthopToWire(n: Nexthop): ProtoNexthop {
  return create(NexthopSchema, {
    id: n.id,
    family: n.family,
    gateway: n.gateway ?? "",
    device: n.dev,
    onlink: n.onlink,
    blackhole: n.blackhole,
    group: (n.group ?? []).map((m) => ({ id: m.id, weight: m.weight })),
    protocol: n.protocol === NEXTHOP_DEFAULT_PROTOCOL ? "" : n.protocol,
    attrs: attrsToWire(n.attrs),
  });
}

function ruleToWire(r: Rule): ProtoRule {
  return create(RuleSchema, {
    priority: r.priority,
    family: r.family,
    from: r.src ?? "",
    to: r.dst ?? "",
    iif: r.iif ?? "",
    oif: r.oif ?? "",
    fwmark: r.fwmark?.mark ?? 0,
    fwmask: r.fwmark?.mask ?? 0,
    table: r.table,
    action: RULE_ACTIONS[r.action],
    not: r.not,
    attrs: (r.attrs ?? []).map(([name, value]) => ({ name, value })),
  });
}

function neighborToWire(n: Neighbor): ProtoNeighbor {
  return create(NeighborSchema, {
    address: n.ip,
    device: n.dev,
    lladdr: n.lladdr,
    router: n.router,
    attrs: attrsToWire(n.attrs),
  });
}

/**
 * A namespace's state as the wire State: links but lo, routes of every
 * table but the kernel's own in local, rules the model can carry,
 * permanent neighbours with a MAC, the sysctls given, the nexthop objects.
 */
export function stateToWire(s: {
  links: readonly Link[];
  routes: readonly Route[];
  rules: readonly Rule[];
  neighbors: readonly Neighbor[];
  sysctls: readonly Sysctl[];
  nexthops?: readonly Nexthop[];
}): State {
  return create(StateSchema, {
    interfaces: s.links
      .filter((l) => isManagedLink(l.name) && !l.flags.includes("LOOPBACK"))
      .map(linkToWire),
    routes: s.routes.filter(isStateRoute).map(routeToWire),
    rules: s.rules.filter((r) => !r.other?.length).map(ruleToWire),
    neighbors: s.neighbors
      .filter(
        (n) => ((n.state.includes("PERMANENT") && n.lladdr) || isProxy(n)) && isManagedLink(n.dev),
      )
      .map(neighborToWire),
    sysctls: s.sysctls.map((x) => ({ key: x.key, value: x.value })),
    nexthops: (s.nexthops ?? []).map(nexthopToWire),
  });
}
