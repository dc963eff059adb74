/**
 * The RPC edge: what status a peer sees for an error the network layer
 * threw. One table, one test per row (test/unit/error-status.test.ts).
 * Everything else goes through TtrpcError.from (a TtrpcError as it is, an
 * abort as DEADLINE_EXCEEDED or CANCELLED, anything unknown as UNKNOWN).
 */
import { NetError, type NetErrorKind } from "../net/model/net-error";
import { Code, TtrpcError } from "../ttrpc/codes";

export const KIND_CODES: Readonly<Record<Exclude<NetErrorKind, "aborted">, Code>> = {
  invalid: Code.INVALID_ARGUMENT,
  "not-found": Code.NOT_FOUND,
  exists: Code.ALREADY_EXISTS,
  denied: Code.PERMISSION_DENIED,
  precondition: Code.FAILED_PRECONDITION,
  unavailable: Code.UNAVAILABLE,
  exhausted: Code.RESOURCE_EXHAUSTED,
  internal: Code.INTERNAL,
};

/**
 * The status code a NetError of `kind` is answered with; an abort takes its
 * reason's, and a reason without a code of its own is a cancellation.
 */
export function codeOfNetError(err: NetError): Code {
  if (err.kind !== "aborted") return KIND_CODES[err.kind];
  const code = TtrpcError.from(err.cause).code;
  return code === Code.UNKNOWN && !(err.cause instanceof TtrpcError) ? Code.CANCELLED : code;
}

/**
 * `err` as the TtrpcError a peer is answered with: a NetError gets its
 * kind's code and keeps its message (the Kata runtime retries on texts
 * such as "Link not found"), the original as `cause`.
 */
export function toTtrpcError(err: unknown): TtrpcError {
  if (err instanceof NetError) {
    return new TtrpcError(err.message, codeOfNetError(err), { cause: err });
  }
  return TtrpcError.from(err);
}

/**
 * A NetError as the status a peer would see, anything else as it is:
 * netagentctl reads pods with the same runners and prints and retries
 * their errors by the same codes.
 */
export function withStatus(err: unknown): unknown {
  return err instanceof NetError ? toTtrpcError(err) : err;
}
