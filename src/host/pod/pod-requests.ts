/**
 * A pod's network namespace read into the requests the Kata runtime would
 * send for it (docs/kata-runtime.md): one Interface per link other
 * than lo, every main-table route on those links except `proto kernel` ones,
 * and the neighbours worth copying (permanent, or the default gateway while
 * reachable; always with a MAC).
 */
import { create } from "@bufbuild/protobuf";
import {
  type ARPNeighbor,
  ARPNeighborSchema,
  type Interface,
  InterfaceSchema,
  type Route as ProtoRoute,
} from "../../gen/types_pb";
import { IpRunner } from "../../net/iproute/ip-runner";
import { defaultDst } from "../../net/model/address";
import type { Link, Neighbor, NetState, Route } from "../../net/model/model";
import { IFF, isManagedLink, NTF_ROUTER, NUD, rawFlags } from "../../net/vocabulary/links";
import { addressToProto, protoFamily, routeToProto } from "../../wire/kata-map";
import { sharedMacs } from "../sync/mirror-scope";
import { type PodFullState, readPodWhole } from "./pod-state";

/** What a sync sends, in the order it is sent. */
export interface SyncRequests {
  interfaces: Interface[];
  routes: ProtoRoute[];
  neighbors: ARPNeighbor[];
  /**
   * Links left out, with the reason (for the report); `hostSide`: a CNI
   * result's host end, never the pod's to carry (no loss of the mirror).
   */
  skipped: { name: string; why: string; hostSide?: true }[];
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** The Interface request for one link: every address, MTU, MAC, NOARP only of the raw flags. */
function interfaceRequest(link: Link): Interface {
  return create(InterfaceSchema, {
    device: link.name,
    name: link.name,
    IPAddresses: link.addresses.map(addressToProto),
    mtu: BigInt(link.mtu),
    hwAddr: link.mac,
    devicePath: "",
    type: link.kind,
    rawFlags: rawFlags(link.flags) & IFF.NOARP,
  });
}

/** A route as the runtime sends it: default as "", host routes as a /32 or /128 CIDR. */
function routeRequest(r: Route): ProtoRoute {
  const route = routeToProto(r);
  if (r.dst === defaultDst(r.family)) route.dest = "";
  return route;
}

function nudBits(n: Neighbor): number {
  let bits = 0;
  if (n.state.includes("PERMANENT")) bits |= NUD.PERMANENT;
  if (n.state.includes("REACHABLE")) bits |= NUD.REACHABLE;
  return bits;
}

/**
 * Pure: the requests for a namespace's state. Links without an Ethernet MAC
 * (tunnel base devices such as sit0) cannot be found by MAC in the guest,
 * and links without addresses are unconfigured; both are skipped, as the
 * runtime's endpoint scan does. Two links of one MAC are skipped too: an
 * UpdateInterface finds its link by MAC, so the second would configure the
 * first's NIC again.
 */
export function requestsFromState(state: NetState): SyncRequests {
  const skipped: SyncRequests["skipped"] = [];
  const shared = sharedMacs(state.links);
  const links = state.links.filter((l) => {
    if (!isManagedLink(l.name) || l.flags.includes("LOOPBACK")) return false;
    if (!MAC.test(l.mac) || l.mac === "00:00:00:00:00:00") {
      skipped.push({ name: l.name, why: "no Ethernet MAC" });
      return false;
    }
    const twin = shared.get(l.name);
    if (twin) {
      skipped.push({ name: l.name, why: `shares MAC ${twin.mac} with ${twin.with}` });
      return false;
    }
    if (l.addresses.length === 0) {
      skipped.push({ name: l.name, why: "no addresses" });
      return false;
    }
    return true;
  });
  const names = new Set(links.map((l) => l.name));
  const routes = state.routes.filter((r) => names.has(r.dev) && r.protocol !== "kernel");
  const gateways = new Set(
    state.routes
      .filter((r) => r.gateway && r.dst === defaultDst(r.family))
      .map((r) => r.gateway as string),
  );
  const neighbors = state.neighbors.filter(
    (n) =>
      names.has(n.dev) &&
      MAC.test(n.lladdr) &&
      (n.state.includes("PERMANENT") || (n.state.includes("REACHABLE") && gateways.has(n.ip))),
  );
  return {
    interfaces: links.map(interfaceRequest),
    routes: routes.map(routeRequest),
    neighbors: neighbors.map((n) =>
      create(ARPNeighborSchema, {
        toIPAddress: { family: protoFamily(n.family), address: n.ip, mask: "" },
        device: n.dev,
        lladdr: n.lladdr,
        state: nudBits(n),
        flags: n.router ? NTF_ROUTER : 0,
      }),
    ),
    skipped,
  };
}

/** A pod's requests and whole state from one read, and whether a link of it was not yet ready. */
export interface PodBoth {
  requests: SyncRequests;
  full: PodFullState;
  awaitingReady: boolean;
}

/** The pod's requests and its whole state, from one read of its namespace. */
export async function readPodBoth(netns: string, ipBinary?: string): Promise<PodBoth> {
  const { full, net, awaitingReady } = await readPodWhole(netns, ipBinary);
  return { requests: requestsFromState(net), full, awaitingReady };
}

/** Reads the pod namespace `netns` (a resolved name or path) into requests. */
export async function readPodRequests(netns: string, ipBinary?: string): Promise<SyncRequests> {
  const state = await new IpRunner({ binary: ipBinary, netns }).readState();
  return requestsFromState(state);
}
