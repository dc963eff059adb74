/**
 * The hand-written readers and writers, by message type name, for the
 * messages whose size matters (a 10,000-route UpdateRoutes and its answer,
 * a whole state's Apply) or whose count does (the answer to Check). The
 * agent registers its own with its methods (src/agent/main.ts); the host's
 * client (src/client/client.ts) uses the other direction's. Each declines
 * (undefined) what it does not handle, and protobuf-es does it.
 */
import { RoutesSchema, UpdateRoutesRequestSchema } from "../gen/agent_pb";
import { HealthCheckResponseSchema } from "../gen/health_pb";
import {
  ApplyRequestSchema,
  ApplyResponseSchema,
  ReadResponseSchema,
  StateSchema,
} from "../gen/network_pb";
import { encodeHealthCheckResponse } from "./health-writer";
import { encodeReadResponse } from "./read-writer";
import { decodeUpdateRoutesRequest } from "./routes-reader";
import { encodeRoutes } from "./routes-writer";
import { decodeApplyRequest, decodeApplyResponse, decodeState } from "./state-reader";
import { encodeApplyRequest, encodeApplyResponse, encodeState } from "./state-writer";

type FastDecoder = (payload: Uint8Array, limit: number) => unknown;
type FastEncoder = (message: { $typeName: string }) => Uint8Array | undefined;
type AnswerDecoder = (payload: Uint8Array) => unknown;

export const FAST_DECODERS: ReadonlyMap<string, FastDecoder> = new Map([
  [UpdateRoutesRequestSchema.typeName, decodeUpdateRoutesRequest],
  [ApplyRequestSchema.typeName, decodeApplyRequest],
]);
export const FAST_ENCODERS: ReadonlyMap<string, FastEncoder> = new Map<string, FastEncoder>([
  [RoutesSchema.typeName, encodeRoutesOnce],
  [HealthCheckResponseSchema.typeName, encodeHealthCheckResponse],
  [ApplyResponseSchema.typeName, encodeApplyResponse],
  [StateSchema.typeName, encodeState],
  [ReadResponseSchema.typeName, encodeReadResponse],
]);

/** The host's: requests it writes, answers it reads (no entry limit, as its fromBinary has none). */
export const FAST_REQUEST_ENCODERS: ReadonlyMap<string, FastEncoder> = new Map([
  [ApplyRequestSchema.typeName, encodeApplyRequest],
]);
export const FAST_ANSWER_DECODERS: ReadonlyMap<string, AnswerDecoder> = new Map([
  [ApplyResponseSchema.typeName, decodeApplyResponse],
  [StateSchema.typeName, decodeState],
]);

/** The bytes of answers that cannot change (frozen), by answer. */
const frozenBytes = new WeakMap<object, Uint8Array>();

/**
 * A frozen answer (routes-memo.ts gives the same one back for a repeated
 * call) is encoded once; the bytes are only read (copied into the frame).
 */
function encodeRoutesOnce(message: { $typeName: string }): Uint8Array | undefined {
  if (!Object.isFrozen(message)) return encodeRoutes(message);
  let bytes = frozenBytes.get(message);
  if (bytes === undefined) {
    bytes = encodeRoutes(message);
    if (bytes !== undefined) frozenBytes.set(message, bytes);
  }
  return bytes;
}
