/**
 * What the policy checker is shown of a call: the validated request in the
 * model's words, with the request field each element came from, and the
 * guest as read before the call. The services build one (ask.ts), the
 * checker (check.ts) judges it; neither side sees protobuf.
 */
import type { TargetAddress } from "../../net/model/address-attrs";
import type { Sysctl } from "../../net/model/full-state";
import type { Attr, Link, Nexthop, Route } from "../../net/model/model";
import type { Rule } from "../../net/plan/rules";

/** A link as a call wants it. */
export interface LinkAsk {
  /** The request field of the link (`interface`, `desired.interfaces[2]`). */
  field: string;
  /** Lower-case; "" for a tun. */
  mac: string;
  /** "" keeps the current name. */
  name: string;
  /** 0 keeps the current MTU. */
  mtu: number;
  noarp: boolean;
  up: boolean;
  /** Name of the field listing the addresses (`IPAddresses`, `addresses`). */
  addressesField: string;
  addresses: readonly TargetAddress[];
  attrs?: readonly Attr[];
  /** A tun or tap device (made by name when absent). */
  tuntap: boolean;
}

export interface NeighbourAsk {
  field: string;
  ip: string;
  lladdr: string;
  dev: string;
  /** NUD state name, lower-case (`permanent`, `reachable`, ...) or `proxy`. */
  state: string;
  /** `router`, `extern_learn` when set. */
  flags: readonly string[];
}

/** The parts of a call the policy judges; a part left out is not touched by the call. */
export interface PolicyRequest {
  /** `grpc.AgentService/UpdateRoutes`, ...: for the log and metrics. */
  method: string;
  /** A call that only reads the guest. */
  read?: boolean;
  /** The request field that makes a changing method's call a read (Apply's `dry_run`, then true). */
  readField?: string;
  /** A packet-filter change (SetIPTables). */
  packetFilter?: boolean;
  links?: readonly LinkAsk[];
  /** The whole desired route set of the tables the call owns, and the field prefix (`routes`, `desired.routes`). */
  routes?: { field: string; list: readonly Route[]; nexthops?: readonly Nexthop[] };
  /** The whole desired rule set (Apply); `exact`: the kernel's default rules not listed go too. */
  rules?: { field: string; list: readonly Rule[]; exact: boolean };
  neighbours?: readonly NeighbourAsk[];
  sysctls?: { field: string; list: readonly Sysctl[] };
  /** False when the call would change nothing (its plan is empty). */
  changes: boolean;
}

/** The guest before the call, as far as the checker needs it. */
export interface PolicyCurrent {
  links: readonly Pick<Link, "mac" | "name" | "addresses">[];
  /** Read by Apply only. */
  rules?: readonly Rule[];
}

/** A refusal: the rule, the request field and its value, and why. */
export interface Refusal {
  rule: string;
  field: string;
  value: string;
  why: string;
}
