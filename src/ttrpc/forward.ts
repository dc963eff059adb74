/**
 * The server's hook for calls it does not serve itself: a request whose
 * service or method is not in the method table goes, as the bytes it came
 * in, to a {@link Forward} (front mode: to the agent behind), and whatever
 * encoded ttrpc.Response that returns is sent back unchanged under the
 * caller's stream id. Generic: nothing here knows where a call goes.
 */
import { Code, TtrpcError } from "./codes";
import type { RequestEnvelope } from "./envelope";
import { encodeFrame, FrameType } from "./frame";
import { clipText } from "./quote";
import type { CallOutcome } from "./run-call";
import { encodeErrorResponse } from "./status";

export interface ForwardedCall {
  /** The decoded envelope (service, method, metadata, timeout_nano). */
  readonly request: RequestEnvelope;
  /** The encoded ttrpc.Request as received (a view: copy what is kept). */
  readonly raw: Uint8Array;
  /** When the request arrived, in `performance.now()` milliseconds. */
  readonly started: number;
  /** Aborted when the caller goes away or the server cancels its calls. */
  readonly signal: AbortSignal;
}

export interface ForwardedAnswer {
  /** An encoded ttrpc.Response, at most the frame limit: sent as it is. */
  response: Uint8Array;
  /** Its status, for logs and metrics. */
  code: number;
  message: string;
}

/** Forwards one call; rejects with a TtrpcError when it could not be done. */
export type Forward = (call: ForwardedCall) => Promise<ForwardedAnswer>;

const DONE: Promise<void> = Promise.resolve();

/** Runs a forwarded call to its outcome; never rejects. */
export async function runForwarded(
  forward: Forward,
  streamId: number,
  call: ForwardedCall,
): Promise<CallOutcome> {
  try {
    const answer = await forward(call);
    return {
      frame: encodeFrame(streamId, FrameType.Response, 0, answer.response),
      code: answer.code as Code,
      message: answer.message,
      settled: DONE,
    };
  } catch (reason) {
    let err: TtrpcError;
    try {
      err = TtrpcError.from(reason);
    } catch {
      err = new TtrpcError("forwarding failed with an unreadable error", Code.INTERNAL);
    }
    const status = new TtrpcError(clipText(err.message, 4096), err.code);
    return {
      frame: encodeFrame(streamId, FrameType.Response, 0, encodeErrorResponse(status)),
      code: status.code,
      message: status.message,
      settled: DONE,
    };
  }
}
