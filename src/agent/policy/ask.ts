/**
 * A validated call as the policy checker sees it (request.ts): the Kata
 * methods' specs and Apply's desired state, each element with the request
 * field it came from. Pure.
 */
import type { DesiredState } from "../../net/model/full-state";
import type { Link, Neighbor, Route } from "../../net/model/model";
import { isProxy } from "../../net/vocabulary/neighbor-attrs";
import type { InterfaceSpec, NeighborSpec } from "../validate/validate-interface-neighbors";
import type { LinkAsk, PolicyRequest } from "./request";

const KATA = "grpc.AgentService";

/** A read-only call. */
export function askRead(method: string): PolicyRequest {
  return { method, read: true, changes: false };
}

/** An Apply with `dry_run`: it changes nothing and answers the plan and state it read. */
export function askDryRun(): PolicyRequest {
  return { method: "netagent.v1.Network/Apply", read: true, readField: "dry_run", changes: false };
}

/** Whether UpdateInterface would leave `link` as it is (name, MTU, NOARP, up, its global addresses). */
function linkUnchanged(spec: InterfaceSpec, link: Link | undefined): boolean {
  if (link === undefined) return false;
  if (spec.name !== "" && spec.name !== link.name) return false;
  if (spec.mtu !== 0 && spec.mtu !== link.mtu) return false;
  if (spec.noarp !== link.flags.includes("NOARP") || !link.flags.includes("UP")) return false;
  const have = link.addresses
    .filter((a) => a.scope === "global")
    .map((a) => `${a.address}/${a.prefix}`)
    .sort();
  const want = spec.addresses.map((a) => `${a.address}/${a.prefix}`).sort();
  return have.length === want.length && have.every((a, i) => a === want[i]);
}

/** UpdateInterface of `spec` on the guest's `link` (undefined: not there yet). */
export function askInterface(spec: InterfaceSpec, link?: Link): PolicyRequest {
  const ask: LinkAsk = {
    field: "interface",
    mac: spec.mac,
    name: spec.name,
    mtu: spec.mtu,
    noarp: spec.noarp,
    up: true,
    addressesField: "IPAddresses",
    addresses: spec.addresses,
    tuntap: false,
  };
  return { method: `${KATA}/UpdateInterface`, links: [ask], changes: !linkUnchanged(spec, link) };
}

/** UpdateRoutes of the whole main table `routes`; `changes`: its plan is not empty. */
export function askRoutes(routes: readonly Route[], changes: boolean): PolicyRequest {
  return { method: `${KATA}/UpdateRoutes`, routes: { field: "routes", list: routes }, changes };
}

/** AddARPNeighbors of `specs` on a guest holding `current`. */
export function askNeighbours(
  specs: readonly NeighborSpec[],
  current: readonly Neighbor[],
): PolicyRequest {
  const has = (s: NeighborSpec) =>
    current.some(
      (n) =>
        n.ip === s.ip &&
        n.dev === s.dev &&
        n.lladdr === s.lladdr &&
        n.state.map((x) => x.toLowerCase()).includes(s.nud),
    );
  return {
    method: `${KATA}/AddARPNeighbors`,
    neighbours: specs.map((s, i) => ({
      field: `neighbors[${i}]`,
      ip: s.ip,
      lladdr: s.lladdr,
      dev: s.dev,
      state: s.nud,
      flags: [...(s.router ? ["router"] : []), ...(s.externLearned ? ["extern_learn"] : [])],
    })),
    changes: !specs.every(has),
  };
}

/** SetIPTables. */
export function askPacketFilter(): PolicyRequest {
  return { method: `${KATA}/SetIPTables`, packetFilter: true, changes: true };
}

/** Apply of `desired`; `changes`: its plan is not empty. */
export function askApply(desired: DesiredState, exact: boolean, changes: boolean): PolicyRequest {
  return {
    method: "netagent.v1.Network/Apply",
    links: desired.links.map((l, i) => ({
      field: `desired.interfaces[${i}]`,
      mac: l.mac,
      name: l.name,
      mtu: l.mtu,
      noarp: l.noarp,
      up: l.up,
      addressesField: "addresses",
      addresses: l.addresses,
      ...(l.attrs ? { attrs: l.attrs } : {}),
      tuntap: l.tuntap !== undefined,
    })),
    routes: { field: "desired.routes", list: desired.routes, nexthops: desired.nexthops },
    rules: { field: "desired.rules", list: desired.rules, exact },
    neighbours: desired.neighbors.map((n, i) => ({
      field: `desired.neighbors[${i}]`,
      ip: n.ip,
      lladdr: n.lladdr,
      dev: n.dev,
      state: isProxy(n) ? "proxy" : "permanent",
      flags: [
        ...(n.router ? ["router"] : []),
        ...((n.attrs ?? []).some(([k, v]) => k === "extern_learn" && v === "on")
          ? ["extern_learn"]
          : []),
      ],
    })),
    sysctls: { field: "desired.sysctls", list: desired.sysctls },
    changes,
  };
}
