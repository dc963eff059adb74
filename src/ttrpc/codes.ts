/**
 * gRPC status codes (google/rpc/code.proto), as ttRPC carries them in
 * `google.rpc.Status.code`, and the one error class the whole agent throws.
 */
export enum Code {
  OK = 0,
  CANCELLED = 1,
  UNKNOWN = 2,
  INVALID_ARGUMENT = 3,
  DEADLINE_EXCEEDED = 4,
  NOT_FOUND = 5,
  ALREADY_EXISTS = 6,
  PERMISSION_DENIED = 7,
  RESOURCE_EXHAUSTED = 8,
  FAILED_PRECONDITION = 9,
  ABORTED = 10,
  OUT_OF_RANGE = 11,
  UNIMPLEMENTED = 12,
  INTERNAL = 13,
  UNAVAILABLE = 14,
  DATA_LOSS = 15,
  UNAUTHENTICATED = 16,
}

/** The name of a code, e.g. "NOT_FOUND"; unknown numbers print as "CODE_42". */
export function codeName(code: number): string {
  return Code[code] ?? `CODE_${code}`;
}

/**
 * An error with a status code. Handlers throw it; the server turns it (and
 * only it, through {@link TtrpcError.from}) into a `google.rpc.Status`.
 */
export class TtrpcError extends Error {
  override readonly name = "TtrpcError";

  constructor(
    message: string,
    readonly code: Code,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /**
   * Any thrown value as a TtrpcError: itself when it already is one, an abort
   * as DEADLINE_EXCEEDED or CANCELLED, anything else as UNKNOWN with its text.
   */
  static from(reason: unknown): TtrpcError {
    if (reason instanceof TtrpcError) return reason;
    if (reason instanceof Error) {
      if (reason.name === "TimeoutError") {
        return new TtrpcError(reason.message || "deadline exceeded", Code.DEADLINE_EXCEEDED, {
          cause: reason,
        });
      }
      if (reason.name === "AbortError") {
        return new TtrpcError(reason.message || "cancelled", Code.CANCELLED, { cause: reason });
      }
      return new TtrpcError(reason.message, Code.UNKNOWN, { cause: reason });
    }
    return new TtrpcError(String(reason), Code.UNKNOWN, { cause: reason });
  }

  /** How the Go client prints it: `rpc error: code = NotFound desc = ...` uses
   * CamelCase; we keep the proto enum name, which is what the CLI shows. */
  override toString(): string {
    return `${codeName(this.code)}: ${this.message}`;
  }
}
