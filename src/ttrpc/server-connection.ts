/**
 * One ttRPC connection, server side. Protocol only: bytes come in through
 * {@link ServerConnection.receive} and go out through the `write` callback.
 * Requests run concurrently, up to a cap, and answer in completion order;
 * all frames leave through the single `write`, so frames never interleave.
 * At the cap, received bytes wait undecoded and `onBusy(true)` asks the
 * transport to stop reading until a call ends.
 */
import { CallAbort } from "./call-abort";
import { Code, TtrpcError } from "./codes";
import { decodeRequest, type RequestEnvelope } from "./envelope";
import { type Forward, runForwarded } from "./forward";
import { type DecodedFrame, encodeFrame, FrameDecoder, FrameType, MAX_DATA_LENGTH } from "./frame";
import {
  MAX_CALLS_PER_CONNECTION,
  MAX_FORWARDED_CALLS_PER_CONNECTION,
  MAX_REPEATED_ENTRIES,
} from "./limits";
import { clipText } from "./quote";
import { type CallOutcome, errorText, runCall } from "./run-call";
import type { ServiceRegistry } from "./service";
import { encodeErrorResponse } from "./status";

export interface ServerConnectionOptions {
  registry: ServiceRegistry;
  /** Writes one whole frame to the peer. */
  write: (frame: Uint8Array) => void;
  /** Told about each answered call, for logging. */
  onCall?: (info: CallInfo) => void;
  /** Told when reading should pause (true: at the call cap) and resume (false). */
  onBusy?: (busy: boolean) => void;
  /**
   * False while answers already written wait for the peer past a bound: no
   * new call starts then (each could add an answer of up to 4 MiB). Call
   * {@link ServerConnection.writable} when that may have changed.
   */
  canStart?: () => boolean;
  /** Calls running at once (default {@link MAX_CALLS_PER_CONNECTION}). */
  maxInFlight?: number;
  /** Entries of a repeated field per request (default {@link MAX_REPEATED_ENTRIES}). */
  maxRepeated?: number;
  /**
   * Where a call goes whose service or method is not in the registry
   * (forward.ts); absent, such a call is UNIMPLEMENTED.
   */
  forward?: Forward;
  /** Forwarded calls running at once (default {@link MAX_FORWARDED_CALLS_PER_CONNECTION}). */
  maxForwarded?: number;
}

export interface CallInfo {
  streamId: number;
  service: string;
  method: string;
  code: Code;
  message: string;
  durationMs: number;
}

/** Settled already: the `done` of a call before its work is chained on. */
const DONE: Promise<void> = Promise.resolve();

/**
 * Requests one connection starts per read from its peer (a socket reads
 * once a turn) or per scheduled pump before letting others in.
 */
export const TURN_BUDGET = 512;

interface InFlight {
  controller: CallAbort;
  done: Promise<void>;
}

/** A call's outcome, now or later. */
type Outcome = ReturnType<typeof runCall>;

export class ServerConnection {
  private readonly decoder = new FrameDecoder();
  private readonly inflight = new Map<number, InFlight>();
  /** Bytes received and not yet decoded, and frames decoded and not yet started. */
  private readonly input: Uint8Array[] = [];
  private ready: DecodedFrame[] = [];
  private busy = false;
  private pumpScheduled = false;
  /** Requests this connection may still start before yielding to the event loop. */
  private turnBudget = TURN_BUDGET;
  private lastStreamId = 0;
  private closed = false;
  private frames = 0;
  private readonly maxInFlight: number;
  private readonly maxRepeated: number;
  private readonly maxForwarded: number;
  /** Forwarded calls among those in flight. */
  private forwarding = 0;

  constructor(private readonly options: ServerConnectionOptions) {
    this.maxInFlight = options.maxInFlight ?? MAX_CALLS_PER_CONNECTION;
    this.maxRepeated = options.maxRepeated ?? MAX_REPEATED_ENTRIES;
    this.maxForwarded = options.maxForwarded ?? MAX_FORWARDED_CALLS_PER_CONNECTION;
  }

  /** Calls whose work has not ended (answered or not). */
  get activeCalls(): number {
    return this.inflight.size;
  }

  /** Forwarded calls not yet answered. */
  get forwardedCalls(): number {
    return this.forwarding;
  }

  /** True while a frame has been started but not completed by the peer. */
  get partialFrame(): boolean {
    return this.decoder.pending;
  }

  /** True while received requests wait for a call to end (reading is paused). */
  get backlogged(): boolean {
    return this.busy;
  }

  /** Whole frames received so far (a peer making progress completes frames). */
  get framesReceived(): number {
    return this.frames;
  }

  /** The peer took answers: waiting requests may start again. */
  writable(): void {
    this.schedulePump();
  }

  /** Feeds bytes read from the peer. Never throws for any input. */
  receive(chunk: Uint8Array): void {
    if (this.closed || chunk.length === 0) return;
    this.input.push(chunk);
    // A read is a new turn's work: a full budget again.
    this.turnBudget = TURN_BUDGET;
    this.pump();
  }

  /**
   * Stops taking requests and aborts the signals of calls in flight with
   * `reason`; their answers are dropped. Used when the peer is gone.
   */
  close(reason: unknown = new TtrpcError("connection closed", Code.CANCELLED)): void {
    this.closed = true;
    this.input.length = 0;
    this.ready = [];
    for (const call of this.inflight.values()) call.controller.abort(reason);
  }

  /** Aborts the signals of calls in flight with `reason`; their answers still go out. */
  cancel(reason: unknown): void {
    for (const call of this.inflight.values()) call.controller.abort(reason);
  }

  /**
   * Resolves once no call's work is running and no received request waits
   * that could start (requests held back while the peer leaves its answers
   * unread do not hold it). New requests are still taken.
   */
  async drain(): Promise<void> {
    for (;;) {
      if (this.inflight.size > 0) {
        await Promise.all([...this.inflight.values()].map((c) => c.done));
      } else if (
        !this.closed &&
        (this.ready.length > 0 || this.input.length > 0) &&
        (this.options.canStart?.() ?? true)
      ) {
        await new Promise((resolve) => setImmediate(resolve));
      } else {
        return;
      }
    }
  }

  /**
   * Starts more waiting requests on a later turn of the event loop. A
   * finished call starts the next one at once while this turn's budget
   * lasts; past it, a long backlog would be worked off in one unbroken chain
   * of microtasks, and other connections (even accepting a new one) would
   * wait seconds behind one pipelining peer.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    if (this.ready.length === 0 && this.input.length === 0) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.turnBudget = TURN_BUDGET;
      this.pump();
    });
  }

  /**
   * Starts waiting requests while under the caps, decoding input as
   * needed. Which cap a request counts against is known only once it is
   * decoded, so the next one waits while either is full.
   */
  private pump(): void {
    while (
      !this.closed &&
      this.inflight.size - this.forwarding < this.maxInFlight &&
      this.forwarding < this.maxForwarded &&
      (this.options.canStart?.() ?? true)
    ) {
      const frame = this.ready.shift();
      if (frame === undefined) {
        const chunk = this.input.shift();
        if (chunk === undefined) break;
        this.ready = this.decoder.push(chunk);
        this.frames += this.ready.length;
        continue;
      }
      // Refilled by the next read or scheduled pump, not per turn: a timer
      // per turn would be paid by every busy turn.
      this.turnBudget--;
      this.handleFrame(frame);
      if (this.turnBudget <= 0) {
        this.schedulePump();
        break;
      }
    }
    const busy = !this.closed && (this.ready.length > 0 || this.input.length > 0);
    if (busy !== this.busy) {
      this.busy = busy;
      try {
        this.options.onBusy?.(busy);
      } catch {
        // The transport's business; the protocol state is already right.
      }
    }
  }

  private handleFrame(frame: DecodedFrame): void {
    if (frame.kind === "oversize") {
      // Like Go: the body was discarded, the stream fails, the connection lives.
      this.sendError(
        frame.streamId,
        new TtrpcError(
          `message length ${frame.length} exceed maximum message size of ${MAX_DATA_LENGTH}`,
          Code.RESOURCE_EXHAUSTED,
        ),
      );
      return;
    }
    // Data on unary streams, stray Responses and unknown types are ignored,
    // as Go ignores unknown types "for future compat".
    if (frame.type === FrameType.Request) this.startRequest(frame.streamId, frame.data);
  }

  private startRequest(streamId: number, data: Uint8Array): void {
    if (streamId % 2 === 0) {
      this.sendError(
        streamId,
        new TtrpcError("StreamID must be odd for client initiated streams", Code.INVALID_ARGUMENT),
      );
      return;
    }
    if (streamId <= this.lastStreamId) {
      this.sendError(
        streamId,
        new TtrpcError("StreamID cannot be re-used and must increment", Code.INVALID_ARGUMENT),
      );
      return;
    }
    this.lastStreamId = streamId;

    let request: RequestEnvelope;
    try {
      request = decodeRequest(data, this.maxRepeated);
    } catch (err) {
      this.sendError(
        streamId,
        err instanceof TtrpcError
          ? err
          : new TtrpcError(
              `unmarshal request error: ${clipText(errorText(err), 256)}`,
              Code.INVALID_ARGUMENT,
            ),
      );
      return;
    }

    const controller = new CallAbort();
    const started = performance.now();
    const { forward, registry } = this.options;
    if (forward !== undefined && !registry.has(request.service, request.method)) {
      this.forwarding++;
      const outcome = runForwarded(forward, streamId, {
        request,
        raw: data,
        started,
        signal: controller.signal,
      });
      this.track(streamId, request, controller, outcome, started, () => this.forwarding--);
      return;
    }
    const outcome = runCall(registry, streamId, request, controller, this.maxRepeated, started);
    this.track(streamId, request, controller, outcome, started);
  }

  /** Answers `outcome` now, or keeps the call in flight until it is known and its work ended. */
  private track(
    streamId: number,
    request: RequestEnvelope,
    controller: CallAbort,
    outcome: Outcome,
    started: number,
    ended?: () => void,
  ): void {
    // Answered in this turn (the handler did not wait): nothing stays in flight.
    if (!(outcome instanceof Promise)) {
      this.answer(streamId, request, outcome, started);
      return;
    }
    const call: InFlight = { controller, done: DONE };
    this.inflight.set(streamId, call);
    call.done = outcome
      .then((o) => {
        this.answer(streamId, request, o, started);
        return o.settled;
      })
      .catch(() => {})
      .finally(() => {
        this.inflight.delete(streamId);
        ended?.();
        if (this.turnBudget > 0) this.pump();
        else this.schedulePump();
      });
  }

  /** Sends a call's answer (unless the peer is gone) and reports it. */
  private answer(
    streamId: number,
    request: RequestEnvelope,
    outcome: CallOutcome,
    started: number,
  ) {
    if (!this.closed) this.safeWrite(outcome.frame);
    try {
      this.options.onCall?.({
        streamId,
        service: request.service,
        method: request.method,
        code: outcome.code,
        message: outcome.message,
        durationMs: performance.now() - started,
      });
    } catch {
      // Logging failed: the call itself is done and answered.
    }
  }

  private sendError(streamId: number, err: TtrpcError): void {
    this.safeWrite(encodeFrame(streamId, FrameType.Response, 0, encodeErrorResponse(err)));
  }

  /** A transport is not to throw; should one, the call still ends cleanly. */
  private safeWrite(frame: Uint8Array): void {
    try {
      this.options.write(frame);
    } catch {
      // The peer is gone or the channel broken: `closed` follows from the transport.
    }
  }
}
