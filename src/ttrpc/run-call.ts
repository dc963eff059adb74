/**
 * One unary call, server side: decode its payload, run its handler under
 * its deadline, encode its answer. Never rejects: whatever the handler or
 * the encoding throws becomes a status on that call, and an answer that
 * cannot be encoded within the frame limit becomes INTERNAL (a valid,
 * small frame) instead of an exception outside the call.
 */
import { create, type DescMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { CallAbort } from "./call-abort";
import { RequestContext } from "./call-context";
import { Code, TtrpcError } from "./codes";
import { countRepeated } from "./count-repeated";
import { encodeOkResponseFrame, type RequestEnvelope } from "./envelope";
import { encodeFrame, FrameType } from "./frame";
import { clipText } from "./quote";
import type { FastDecoder, FastEncoder, RegisteredMethod, ServiceRegistry } from "./service";
import { encodeErrorResponse } from "./status";

type ToError = ServiceRegistry["toError"];

/** The longest delay setTimeout honours (2^31-1 ms, about 24.8 days). */
const MAX_TIMER_MS = 0x7fff_ffff;

export interface CallOutcome {
  /** The whole Response frame, at most the frame limit. */
  frame: Uint8Array;
  code: Code;
  message: string;
  /**
   * Settles when the handler's work has ended, which can be after the
   * answer: on the deadline the answer goes out at once, while the work
   * (aborted through its signal) may still be finishing or rolling back.
   */
  settled: Promise<void>;
}

/** Settled already: the work of a call answered without waiting. */
const DONE: Promise<void> = Promise.resolve();

/**
 * Runs the call `request` on `streamId`; the answer is sent by the caller.
 * A handler that returns its answer directly (Check, reads answered from
 * memory) is answered in the same turn, without a promise or a timer: the
 * outcome is returned, not a promise of it. A handler that returns a
 * promise is awaited under the call's deadline.
 */
export function runCall(
  registry: ServiceRegistry,
  streamId: number,
  request: RequestEnvelope,
  controller: CallAbort,
  maxRepeated: number,
  started: number = performance.now(),
): CallOutcome | Promise<CallOutcome> {
  const { toError } = registry;
  let output: unknown;
  let entry: RegisteredMethod;
  let timeoutMs: number;
  let pending: boolean;
  try {
    entry = registry.lookup(request.service, request.method);
    const input = decodeInput(entry.input, entry.decode, request.payload, maxRepeated);
    // No timeout (0n, the usual case) needs no BigInt conversion.
    timeoutMs = request.timeoutNano === 0n ? 0 : Number(request.timeoutNano) / 1e6;
    const ctx = new RequestContext(
      controller,
      request,
      timeoutMs > 0 ? started + timeoutMs : undefined,
    );
    output = entry.handler(input, ctx);
    pending = isThenable(output);
  } catch (err) {
    return failed(streamId, toError, err, DONE);
  }
  if (!pending) return answered(streamId, entry, toError, output, DONE);
  return awaitAnswer(
    streamId,
    entry,
    toError,
    output as PromiseLike<unknown>,
    controller,
    timeoutMs,
    started,
  );
}

/** A handler's promise, awaited under the deadline (counted from the call's start). */
async function awaitAnswer(
  streamId: number,
  entry: RegisteredMethod,
  toError: ToError,
  work: PromiseLike<unknown>,
  controller: CallAbort,
  timeoutMs: number,
  started: number,
): Promise<CallOutcome> {
  const settled = Promise.resolve(work).then(
    () => {},
    () => {},
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  let output: unknown;
  try {
    // A longer delay would overflow the timer and fire at once: no timer then.
    if (!(timeoutMs > 0) || timeoutMs > MAX_TIMER_MS) {
      output = await work;
    } else {
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => {
            const reason = new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED);
            controller.abort(reason);
            reject(reason);
          },
          Math.max(0, started + timeoutMs - performance.now()),
        );
      });
      expired.catch(() => {});
      output = await Promise.race([work, expired]);
    }
  } catch (err) {
    return failed(streamId, toError, err, settled);
  } finally {
    clearTimeout(timer);
  }
  return answered(streamId, entry, toError, output, settled);
}

/** The OK answer for `output`, or the error answer when it cannot be encoded. */
function answered(
  streamId: number,
  entry: RegisteredMethod,
  toError: ToError,
  output: unknown,
  settled: Promise<void>,
): CallOutcome {
  let frame: Uint8Array;
  try {
    frame = encodeOkResponseFrame(streamId, encodeOk(entry.output, entry.encode, output));
  } catch (err) {
    return failed(streamId, toError, err, settled);
  }
  return { frame, code: Code.OK, message: "", settled };
}

/** The error answer for a thrown value. */
function failed(
  streamId: number,
  toError: ToError,
  err: unknown,
  settled: Promise<void>,
): CallOutcome {
  const status = statusOf(toError, err);
  return {
    ...answerFrame(streamId, encodeError(status), status.code, status.message),
    settled,
  };
}

/** True for a value `await` would wait on (a promise or any object with a callable then). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** The Response frame, or an INTERNAL one when this answer cannot be framed. */
function answerFrame(streamId: number, response: Uint8Array, code: Code, message: string) {
  try {
    return { frame: encodeFrame(streamId, FrameType.Response, 0, response), code, message };
  } catch (err) {
    const status = new TtrpcError(
      `answer could not be sent: ${clipText(errorText(err), 256)}`,
      Code.INTERNAL,
    );
    const frame = encodeFrame(streamId, FrameType.Response, 0, encodeErrorResponse(status));
    return { frame, code: status.code, message: status.message };
  }
}

/** The payload of the OK Response for a handler's output; INTERNAL when it cannot be encoded. */
function encodeOk(
  schema: DescMessage,
  encode: FastEncoder | undefined,
  output: unknown,
): Uint8Array {
  const message = createOutput(schema, output);
  // The server's own writer for this answer type, when it takes the message.
  const fast = encode?.(message);
  if (fast !== undefined) return fast;
  try {
    return toBinary(schema, message);
  } catch (err) {
    throw new TtrpcError(
      `answer could not be encoded: ${clipText(errorText(err), 256)}`,
      Code.INTERNAL,
      { cause: err },
    );
  }
}

/** The error Response for `status`; a fixed INTERNAL one should even that fail. */
function encodeError(status: TtrpcError): Uint8Array {
  try {
    return encodeErrorResponse(status);
  } catch {
    return encodeErrorResponse(new TtrpcError("answer could not be encoded", Code.INTERNAL));
  }
}

/** The registry's conversion, guarded: a thrown value whose conversion throws is INTERNAL. */
function statusOf(toError: ToError, err: unknown): TtrpcError {
  try {
    return toError(err);
  } catch {
    return new TtrpcError("handler failed with an unreadable error", Code.INTERNAL);
  }
}

function decodeInput(
  schema: DescMessage,
  decode: FastDecoder | undefined,
  payload: Uint8Array,
  maxRepeated: number,
): unknown {
  // An empty payload is the empty message (Check, ListRoutes): no reader needed.
  if (payload.length === 0) return create(schema);
  // The server's own reader for this request type, when it takes the bytes:
  // it reads no more than maxRepeated entries, so they need no count first.
  const fast = decode?.(payload, maxRepeated);
  if (fast !== undefined) return fast;
  countRepeated(schema, payload, maxRepeated);
  try {
    return fromBinary(schema, payload);
  } catch (err) {
    throw new TtrpcError(
      `error unmarshalling ${schema.typeName}: ${clipText(errorText(err), 256)}`,
      Code.INVALID_ARGUMENT,
      { cause: err },
    );
  }
}

function createOutput(schema: DescMessage, output: unknown) {
  if (output === undefined || output === null) {
    throw new TtrpcError("handler returned no message", Code.INTERNAL);
  }
  try {
    // biome-ignore lint/suspicious/noExplicitAny: init shapes are checked by ServiceImpl.
    return create(schema, output as any);
  } catch (err) {
    throw new TtrpcError(
      `answer could not be built: ${clipText(errorText(err), 256)}`,
      Code.INTERNAL,
      { cause: err },
    );
  }
}

/** The text of a thrown value, for messages. */
export function errorText(err: unknown): string {
  try {
    return err instanceof Error ? err.message : String(err);
  } catch {
    return "unreadable error";
  }
}
