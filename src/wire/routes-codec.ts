/**
 * The hand-written readers and writers of the messages whose size matters
 * (a 10,000-route UpdateRoutes and its answer), by message type name, for
 * the call runner (src/ttrpc/run-call.ts). Each declines (undefined) what
 * it does not handle, and protobuf-es does it.
 */
import { RoutesSchema, UpdateRoutesRequestSchema } from "../gen/agent_pb";
import { decodeUpdateRoutesRequest } from "./routes-reader";
import { encodeRoutes } from "./routes-writer";

export { decodeUpdateRoutesRequest, encodeRoutes };

export const FAST_DECODERS: ReadonlyMap<string, (payload: Uint8Array, limit: number) => unknown> =
  new Map([[UpdateRoutesRequestSchema.typeName, decodeUpdateRoutesRequest]]);
export const FAST_ENCODERS: ReadonlyMap<
  string,
  (message: { $typeName: string }) => Uint8Array | undefined
> = new Map([[RoutesSchema.typeName, encodeRoutes]]);
