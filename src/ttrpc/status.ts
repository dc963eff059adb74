/**
 * The one place where a thrown value becomes a `ttrpc.Response` status, and
 * where a status becomes a thrown value again on the client side.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { StatusSchema } from "../gen/google/rpc/status_pb";
import { ResponseSchema } from "../gen/ttrpc_pb";
import { Code, TtrpcError } from "./codes";
import { clipText } from "./quote";

/**
 * Most bytes of a status message: values quoted in messages are cut short
 * already (quote.ts); this catches any other text, such as a tool's output.
 */
const MAX_STATUS_MESSAGE_BYTES = 16 * 1024;

/** A Response carrying `payload` and an empty (OK) status, as Go and Rust send it. */
export function encodeOkResponse(payload: Uint8Array): Uint8Array {
  return toBinary(ResponseSchema, create(ResponseSchema, { status: {}, payload }));
}

/** A Response carrying the status that `reason` maps to, its message cut to the bound. */
export function encodeErrorResponse(reason: unknown): Uint8Array {
  const err = TtrpcError.from(reason);
  const message = clipText(err.message, MAX_STATUS_MESSAGE_BYTES);
  const status = create(StatusSchema, { code: err.code, message });
  return toBinary(ResponseSchema, create(ResponseSchema, { status }));
}

/** The error a status stands for, or undefined when it is OK (or absent). */
export function statusToError(
  status: { code: number; message: string } | undefined,
): TtrpcError | undefined {
  if (status === undefined || status.code === Code.OK) return undefined;
  return new TtrpcError(status.message, status.code as Code);
}
