/**
 * The one error class of the network layer. It says what kind of failure
 * happened in the kernel's and the tools' terms; which status a peer sees
 * is decided at the RPC edge (src/common/error-status.ts), not here.
 */

/**
 * - invalid: the request names something the kernel refuses (bad value, unreachable gateway)
 * - not-found: a link, address, route or file that is not there
 * - exists: the kernel already holds it
 * - denied: not permitted
 * - precondition: the guest lacks what the change needs (a kernel feature, a table)
 * - unavailable: a tool is busy, wedged past its own time limit, or gone; a retry may work
 * - exhausted: output or memory past a bound
 * - aborted: the caller's signal ended the work; `cause` is the signal's reason
 * - internal: anything else (a tool that cannot start, output that cannot be read)
 */
export type NetErrorKind =
  | "invalid"
  | "not-found"
  | "exists"
  | "denied"
  | "precondition"
  | "unavailable"
  | "exhausted"
  | "aborted"
  | "internal";

export class NetError extends Error {
  override readonly name: string = "NetError";

  constructor(
    readonly kind: NetErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The error for work the caller's `signal` ended, naming `what` was cut short. */
export function abortedError(signal: AbortSignal, what: string): NetError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : String(reason ?? "aborted");
  return new NetError("aborted", `${what}: call cancelled (${why})`, { cause: reason });
}
