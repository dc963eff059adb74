/**
 * The tightest network policy admitting one pod's network: what a sync
 * sends, read back by the agent's own validation (so the policy speaks of
 * exactly what the agent will check): its MACs and names, its addresses
 * as they are, its route destinations exactly, its gateways as single
 * addresses, its tables, types and scopes, its rules' tables, its
 * neighbours, its sysctls with their values (and the host's default, which
 * a sync sends to undo a setting the pod dropped), the reads sync and diff
 * need, "down" (a watch retires a NIC gone from the pod by setting its
 * twin down). Pure.
 */

import { isDefaultRule } from "../../agent/policy/check-routes";
import type { Policy } from "../../agent/policy/schema";
import {
  validateInterface,
  validateNeighbors,
} from "../../agent/validate/validate-interface-neighbors";
import { validateRoutes } from "../../agent/validate/validate-routes";
import type { DesiredState } from "../../net/model/full-state";
import type { SyncRequests } from "../pod/pod-requests";

const SCOPE_NAMES: Record<number, "universe" | "site" | "link" | "host" | "nowhere"> = {
  0: "universe",
  200: "site",
  253: "link",
  254: "host",
  255: "nowhere",
};

const sorted = <T>(xs: Iterable<T>): T[] =>
  [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

const host = (ip: string) => `${ip}/${ip.includes(":") ? 128 : 32}`;

export interface PodPolicyOptions {
  /** The pod has a packet filter sync copies (SetIPTables). */
  packetFilter?: boolean;
  /** Default values of the pod's sysctl keys on this host (sent to undo a setting). */
  defaults?: ReadonlyMap<string, string>;
}

/** The policy admitting exactly `desired` (and nothing else). */
export function policyForState(desired: DesiredState, options: PodPolicyOptions = {}): Policy {
  const nics = desired.links.filter((l) => l.tuntap === undefined);
  const addrs = (family: 4 | 6) =>
    sorted(
      desired.links.flatMap((l) =>
        l.addresses.filter((a) => a.family === family).map((a) => `${a.address}/${a.prefix}`),
      ),
    );
  const mtus = desired.links.map((l) => l.mtu).filter((m) => m > 0);
  const gateways = desired.routes.flatMap((r) => [
    ...(r.gateway ? [r.gateway] : []),
    ...(r.hops ?? []).flatMap((h) => (h.gateway ? [h.gateway] : [])),
  ]);
  for (const n of desired.nexthops) if (n.gateway) gateways.push(n.gateway);
  const rules = desired.rules.filter((r) => !isDefaultRule(r));
  const flags: Policy["interfaces"]["flags"] = ["down"];
  if (desired.links.some((l) => l.noarp)) flags.push("noarp");
  for (const f of ["promisc", "allmulticast"] as const) {
    if (desired.links.some((l) => (l.attrs ?? []).some(([n, v]) => n === f && v === "on")))
      flags.push(f);
  }
  const sysctls: Policy["sysctls"] = {};
  for (const s of desired.sysctls) {
    const def = options.defaults?.get(s.key);
    sysctls[s.key] = sorted(def === undefined ? [s.value] : [s.value, def]);
  }
  return {
    netagentPolicy: 1,
    interfaces: {
      macs: sorted(nics.map((l) => l.mac)),
      names: sorted(desired.links.map((l) => l.name).filter((n) => n !== "")),
      max: desired.links.filter((l) => l.addresses.length > 0).length,
      mtu: mtus.length
        ? { min: Math.min(...mtus), max: Math.max(...mtus) }
        : { min: 1280, max: 1500 },
      flags,
    },
    addresses: {
      ipv4: { exact: addrs(4), within: [] },
      ipv6: { exact: addrs(6), within: [] },
      perInterface: Math.max(0, ...desired.links.map((l) => l.addresses.length)),
    },
    routes: {
      destinations: { exact: sorted(desired.routes.map((r) => r.dst)), within: [] },
      gateways: sorted(gateways.map(host)),
      tables: sorted(desired.routes.map((r) => r.table ?? 254)),
      types: sorted(desired.routes.map((r) => r.type)) as Policy["routes"]["types"],
      scopes: sorted(desired.routes.map((r) => SCOPE_NAMES[r.scope] ?? "universe")),
    },
    rules: {
      allowed: rules.length > 0,
      tables: sorted(rules.filter((r) => r.action === "lookup" && r.table > 0).map((r) => r.table)),
    },
    neighbours: {
      ips: sorted(desired.neighbors.map((n) => host(n.ip))),
      lladdrs: sorted(desired.neighbors.map((n) => n.lladdr).filter((m) => m !== "")),
      states: desired.neighbors.some((n) => n.lladdr === "")
        ? ["permanent", "proxy"]
        : ["permanent"],
      flags: [
        ...(desired.neighbors.some((n) => n.router) ? (["router"] as const) : []),
        ...(desired.neighbors.some((n) =>
          (n.attrs ?? []).some(([k, v]) => k === "extern_learn" && v === "on"),
        )
          ? (["extern_learn"] as const)
          : []),
      ],
    },
    sysctls,
    packetFilter: options.packetFilter ?? false,
    reads: true,
    tuntap: { names: sorted(desired.links.filter((l) => l.tuntap).map((l) => l.name)) },
    phases: { initial: "setup", settleMs: 10_000, running: [] },
  };
}

/** Kata requests (a CNI result's, a pod's) as the agent validates them, as a desired state. */
function desiredFromKata(requests: SyncRequests): DesiredState {
  const links = requests.interfaces.map((i) => {
    const spec = validateInterface(i);
    return {
      mac: spec.mac,
      name: spec.name,
      mtu: spec.mtu,
      noarp: spec.noarp,
      up: true,
      addresses: spec.addresses,
    };
  });
  const neighbors = validateNeighbors(requests.neighbors).specs.map((n) => ({
    family: n.family,
    ip: n.ip,
    dev: n.dev,
    lladdr: n.lladdr,
    router: n.router,
  }));
  return {
    links,
    routes: validateRoutes(requests.routes),
    rules: [],
    neighbors,
    sysctls: [],
    nexthops: [],
  };
}

/** The policy admitting exactly the Kata requests `requests` (UpdateInterface, UpdateRoutes, AddARPNeighbors). */
export function policyForKata(requests: SyncRequests): Policy {
  return policyForState(desiredFromKata(requests));
}
