/**
 * The Kata calls front-mode tests send for one pod NIC, encoded: eth0 with
 * 10.23.0.2/24 (UpdateInterface) and a route to 10.99.0.0/16 through
 * 10.23.0.1 (UpdateRoutes), for the NIC whose MAC is `mac`.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { UpdateInterfaceRequestSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { IPFamily } from "../../src/gen/types_pb";

export function eth0Calls(mac: string): { iface: Uint8Array; routes: Uint8Array } {
  const iface = toBinary(
    UpdateInterfaceRequestSchema,
    create(UpdateInterfaceRequestSchema, {
      interface: {
        hwAddr: mac,
        name: "eth0",
        IPAddresses: [{ family: IPFamily.v4, address: "10.23.0.2", mask: "24" }],
      },
    }),
  );
  const routes = toBinary(
    UpdateRoutesRequestSchema,
    create(UpdateRoutesRequestSchema, {
      routes: { Routes: [{ dest: "10.99.0.0/16", gateway: "10.23.0.1", device: "eth0" }] },
    }),
  );
  return { iface, routes };
}
