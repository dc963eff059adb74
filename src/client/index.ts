/**
 * netagent/client: the library a shim or tool imports to drive a netagent
 * (or the network calls and grpc.Health of any Kata agent) over ttRPC.
 *
 *     import { AgentClient, TtrpcError, Code } from "netagent/client";
 *     const client = await AgentClient.connect("unix:///run/netagent.sock");
 *     const state = await client.network.get({}, { timeoutMs: 5000 });
 *
 * Addresses: under Bun every address netagentctl's --addr takes
 * (`unix:///path`, `vsock://CID:PORT`, `hvsock:///uds:PORT`); under Node 20
 * or later `unix://` and `hvsock://` (vsock needs bun:ffi and fails
 * UNIMPLEMENTED there). Every failure is a {@link TtrpcError}: a gRPC
 * status `code` ({@link Code}) and a `message`. The generated message and
 * service types ship with it, by proto package: `health`, `agent`
 * (grpc.AgentService's messages), `types` (grpc's Interface, Route, ...),
 * `network` (netagent.v1).
 */
export * as agent from "../gen/agent_pb";
export * as health from "../gen/health_pb";
export * as network from "../gen/network_pb";
export * as types from "../gen/types_pb";
export { type AgentAddress, formatAddress, parseAddress } from "../transport/address";
export type { CallOptions } from "../ttrpc/client-connection";
export { Code, TtrpcError } from "../ttrpc/codes";
export { AgentClient } from "./client";
export { type ServiceClient, serviceClient, type UnaryCaller } from "./services";
