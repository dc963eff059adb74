/**
 * The route tables the UpdateRoutes rows send: N IPv4 /24s via a gateway
 * inside eth0's subnet, valid in the bench namespace. The same table as a
 * protobuf UpdateRoutesRequest (for the agent) and as `ip -batch` lines in
 * exactly the agent's rendering (for the floor).
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";

export const DEV = "eth0";
export const PEER = "peer0";
export const ADDRESS = "10.0.0.2/24";
export const GATEWAY = "10.0.0.1";

/** Destination i: 10.(1 + i/256).(i%256).0/24, outside eth0's 10.0.0.0/24; up to 65,280. */
export function dest(i: number): string {
  return `10.${1 + (i >> 8)}.${i & 255}.0/24`;
}

/** Encoded grpc.UpdateRoutesRequest with `n` routes. */
export function updateRoutesPayload(n: number, opts: { reversed?: boolean } = {}): Uint8Array {
  const Routes = Array.from({ length: n }, (_, i) => ({
    dest: dest(opts.reversed ? n - 1 - i : i),
    gateway: GATEWAY,
    device: DEV,
  }));
  return toBinary(
    UpdateRoutesRequestSchema,
    create(UpdateRoutesRequestSchema, { routes: { Routes } }),
  );
}

/** The same routes as `ip -batch` input, line for line what the agent writes. */
export function batchText(n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) {
    s += `route replace ${dest(i)} via ${GATEWAY} dev ${DEV} scope 0 metric 0 table main\n`;
  }
  return s;
}
