/**
 * The whole network state of a namespace as the netagent.v1.Network service
 * sees it: links, routes of every table, policy rules, neighbours, sysctls.
 * The desired side is what a validated Apply request says.
 */

import type { Rule } from "../plan/rules";
import type { Attr } from "../vocabulary/attrs";
import type { Tuntap } from "../vocabulary/tuntap";
import type { Family } from "./address";
import type { TargetAddress } from "./address-attrs";
import type { Link, Neighbor, Nexthop, Route } from "./model";

export interface Sysctl {
  key: string;
  value: string;
}

export interface FullState {
  links: Link[];
  /** Every table; each route's `table` is set. */
  routes: Route[];
  rules: Rule[];
  neighbors: Neighbor[];
  /** Values read, by key (only the keys asked for). */
  sysctls: Map<string, string>;
  /** The nexthop objects (absent: not read, as none). */
  nexthops?: Nexthop[];
}

export interface DesiredLink {
  /** "" for a tun, or a tap that keeps the kernel's. */
  mac: string;
  /** "" keeps the current name (never "" with `tuntap`). */
  name: string;
  /** 0 keeps the current MTU. */
  mtu: number;
  noarp: boolean;
  up: boolean;
  /** In the order the link is to list them (the kernel's order per family). */
  addresses: DesiredAddress[];
  /** Link attributes to set (vocabulary/link-attrs.ts); one left out keeps the link's. */
  attrs?: Attr[];
  /** A tun or tap device, found by name and made when absent (plan-tuntap.ts). */
  tuntap?: Tuntap;
}

/** A desired address; scope left out: global (IPv6 link-local: link). */
export type DesiredAddress = TargetAddress;

export interface DesiredNeighbor {
  family: Family;
  ip: string;
  dev: string;
  /** "" for a proxy entry. */
  lladdr: string;
  router: boolean;
  /** proxy, extern_learn (vocabulary/neighbor-attrs.ts). */
  attrs?: Attr[];
}

export interface DesiredState {
  links: DesiredLink[];
  /** Every route with its `table` set. */
  routes: Route[];
  rules: Rule[];
  neighbors: DesiredNeighbor[];
  /** In write order, each key once. */
  sysctls: Sysctl[];
  /** Exactly these nexthop objects (the kernel has none of its own). */
  nexthops: Nexthop[];
}
