/**
 * The builders of the hostile corpus (policy-corpus.ts): each takes the
 * pod's own request of its kind (a Kata request, or the Apply), makes one
 * malicious change to a copy, and records it with the policy rule that
 * must refuse it.
 */
import { clone, create, toBinary } from "@bufbuild/protobuf";
import {
  AddARPNeighborsRequestSchema,
  SetIPTablesRequestSchema,
  UpdateInterfaceRequestSchema,
  UpdateRoutesRequestSchema,
} from "../../src/gen/agent_pb";
import { type ApplyRequest, ApplyRequestSchema, type State } from "../../src/gen/network_pb";
import { type Interface, InterfaceSchema, IPFamily, type Route } from "../../src/gen/types_pb";
import type { SyncRequests } from "../../src/host/pod/pod-requests";

export interface Hostile {
  name: string;
  service: string;
  method: string;
  payload: Uint8Array;
  /** The policy rule expected in the refusal, or "validation" (INVALID_ARGUMENT). */
  rule: string;
}

const KATA = "grpc.AgentService";
const NET = "netagent.v1.Network";

/** The cases built from the pod's own requests: each builder pushes one into `out`. */
export function corpusBuilders(kata: SyncRequests, apply: ApplyRequest, gw: string) {
  const out: Hostile[] = [];
  const nic = kata.interfaces[0] as Interface;
  const iface = (name: string, rule: string, edit: (i: Interface) => void) => {
    const copy = clone(InterfaceSchema, nic);
    edit(copy);
    out.push({
      name: `UpdateInterface: ${name}`,
      service: KATA,
      method: "UpdateInterface",
      payload: toBinary(
        UpdateInterfaceRequestSchema,
        create(UpdateInterfaceRequestSchema, { interface: copy }),
      ),
      rule,
    });
  };
  const routes = (name: string, rule: string, edit: (r: Route[]) => Route[]) => {
    const list = edit(kata.routes.map((r) => ({ ...r }) as Route));
    out.push({
      name: `UpdateRoutes: ${name}`,
      service: KATA,
      method: "UpdateRoutes",
      payload: toBinary(
        UpdateRoutesRequestSchema,
        create(UpdateRoutesRequestSchema, { routes: { Routes: list } }),
      ),
      rule,
    });
  };
  const route = (dest: string, extra: Partial<Route> = {}) =>
    ({
      ...(kata.routes[0] as Route),
      dest,
      gateway: gw,
      source: "",
      scope: 0,
      flags: 0,
      ...extra,
    }) as Route;
  const neigh = (name: string, rule: string, ip: string, lladdr: string, state = 128) =>
    out.push({
      name: `AddARPNeighbors: ${name}`,
      service: KATA,
      method: "AddARPNeighbors",
      rule,
      payload: toBinary(
        AddARPNeighborsRequestSchema,
        create(AddARPNeighborsRequestSchema, {
          neighbors: {
            ARPNeighbors: [
              {
                toIPAddress: { family: IPFamily.v4, address: ip, mask: "" },
                device: nic.name,
                lladdr,
                state,
                flags: 0,
              },
            ],
          },
        }),
      ),
    });
  const filter = (name: string, data: string) =>
    out.push({
      name: `SetIPTables: ${name}`,
      service: KATA,
      method: "SetIPTables",
      rule: "packetFilter",
      payload: toBinary(
        SetIPTablesRequestSchema,
        create(SetIPTablesRequestSchema, { isIpv6: false, data: new TextEncoder().encode(data) }),
      ),
    });
  const applied = (name: string, rule: string, edit: (s: State) => void) => {
    const req = clone(ApplyRequestSchema, apply);
    edit(req.desired as State);
    out.push({
      name: `Apply: ${name}`,
      service: NET,
      method: "Apply",
      payload: toBinary(ApplyRequestSchema, req),
      rule,
    });
  };
  const v4 = (a: { address: string }) => !a.address.includes(":");
  return { out, nic, iface, routes, route, neigh, filter, applied, v4 };
}

export type Builders = ReturnType<typeof corpusBuilders>;
