/**
 * One ttRPC connection, server side. Protocol only: bytes come in through
 * {@link ServerConnection.receive} and go out through the `write` callback.
 * Requests run concurrently and answer in completion order; all frames leave
 * through the single `write`, so frames never interleave.
 */
import { create, type DescMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Request, RequestSchema } from "../gen/ttrpc_pb";
import { Code, TtrpcError } from "./codes";
import { encodeFrame, FrameDecoder, FrameType, MAX_DATA_LENGTH } from "./frame";
import type { CallContext, ServiceRegistry } from "./service";
import { encodeErrorResponse, encodeOkResponse } from "./status";

export interface ServerConnectionOptions {
  registry: ServiceRegistry;
  /** Writes one whole frame to the peer. */
  write: (frame: Uint8Array) => void;
  /** Told about each finished call, for logging. */
  onCall?: (info: CallInfo) => void;
}

export interface CallInfo {
  streamId: number;
  service: string;
  method: string;
  code: Code;
  message: string;
  durationMs: number;
}

/** The longest delay setTimeout honours (2^31-1 ms, about 24.8 days). */
const MAX_TIMER_MS = 0x7fff_ffff;

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

export class ServerConnection {
  private readonly decoder = new FrameDecoder();
  private readonly inflight = new Map<number, InFlight>();
  private lastStreamId = 0;
  private closed = false;
  private frames = 0;

  constructor(private readonly options: ServerConnectionOptions) {}

  /** Calls started and not yet answered. */
  get activeCalls(): number {
    return this.inflight.size;
  }

  /** True while a frame has been started but not completed by the peer. */
  get partialFrame(): boolean {
    return this.decoder.pending;
  }

  /** Whole frames received so far (a peer making progress completes frames). */
  get framesReceived(): number {
    return this.frames;
  }

  /** Feeds bytes read from the peer. Never throws for any input. */
  receive(chunk: Uint8Array): void {
    if (this.closed) return;
    for (const frame of this.decoder.push(chunk)) {
      this.frames++;
      if (frame.kind === "oversize") {
        // Like Go: the body was discarded, the stream fails, the connection lives.
        this.sendError(
          frame.streamId,
          new TtrpcError(
            `message length ${frame.length} exceed maximum message size of ${MAX_DATA_LENGTH}`,
            Code.RESOURCE_EXHAUSTED,
          ),
        );
        continue;
      }
      // Data on unary streams, stray Responses and unknown types are ignored,
      // as Go ignores unknown types "for future compat".
      if (frame.type !== FrameType.Request) continue;
      this.startRequest(frame.streamId, frame.data);
    }
  }

  /**
   * Stops taking requests and aborts the signals of calls in flight with
   * `reason`; their answers are dropped. Used when the peer is gone.
   */
  close(reason: unknown = new TtrpcError("connection closed", Code.CANCELLED)): void {
    this.closed = true;
    for (const call of this.inflight.values()) call.controller.abort(reason);
  }

  /** Aborts the signals of calls in flight with `reason`; their answers still go out. */
  cancel(reason: unknown): void {
    for (const call of this.inflight.values()) call.controller.abort(reason);
  }

  /** Resolves once no call is in flight (new requests are still taken). */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) {
      await Promise.all([...this.inflight.values()].map((c) => c.done));
    }
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

    let request: Request;
    try {
      request = fromBinary(RequestSchema, data);
    } catch (err) {
      this.sendError(
        streamId,
        new TtrpcError(`unmarshal request error: ${errorText(err)}`, Code.INVALID_ARGUMENT),
      );
      return;
    }

    const controller = new AbortController();
    const call: InFlight = { controller, done: Promise.resolve() };
    this.inflight.set(streamId, call);
    call.done = this.runCall(streamId, request, controller).finally(() => {
      this.inflight.delete(streamId);
    });
  }

  private async runCall(
    streamId: number,
    request: Request,
    controller: AbortController,
  ): Promise<void> {
    const started = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let deadline: number | undefined;
    let response: Uint8Array;
    let code = Code.OK;
    let message = "";
    try {
      const entry = this.options.registry.lookup(request.service, request.method);
      let input: unknown;
      try {
        input = fromBinary(entry.input, request.payload);
      } catch (err) {
        throw new TtrpcError(
          `error unmarshalling ${entry.input.typeName}: ${errorText(err)}`,
          Code.INVALID_ARGUMENT,
          { cause: err },
        );
      }
      const timeoutMs = Number(request.timeoutNano) / 1e6;
      const expired = new Promise<never>((_, reject) => {
        if (timeoutMs > 0) {
          deadline = started + timeoutMs;
          // A longer delay would overflow the timer and fire at once.
          if (timeoutMs > MAX_TIMER_MS) return;
          timer = setTimeout(() => {
            const reason = new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED);
            controller.abort(reason);
            reject(reason);
          }, timeoutMs);
        }
      });
      expired.catch(() => {});
      const ctx: CallContext = {
        signal: controller.signal,
        deadline,
        metadata: metadataMap(request),
      };
      const output = await Promise.race([
        Promise.resolve().then(() => entry.handler(input, ctx)),
        expired,
      ]);
      const payload = toBinary(entry.output, createOutput(entry.output, output));
      response = encodeOkResponse(payload);
      if (response.length > MAX_DATA_LENGTH) {
        throw new TtrpcError(
          `response length ${response.length} exceed maximum message size of ${MAX_DATA_LENGTH}`,
          Code.RESOURCE_EXHAUSTED,
        );
      }
    } catch (err) {
      const status = TtrpcError.from(err);
      code = status.code;
      message = status.message;
      response = encodeErrorResponse(status);
    } finally {
      clearTimeout(timer);
    }
    if (!this.closed) this.options.write(encodeFrame(streamId, FrameType.Response, 0, response));
    this.options.onCall?.({
      streamId,
      service: request.service,
      method: request.method,
      code,
      message,
      durationMs: performance.now() - started,
    });
  }

  private sendError(streamId: number, err: TtrpcError): void {
    this.options.write(encodeFrame(streamId, FrameType.Response, 0, encodeErrorResponse(err)));
  }
}

function metadataMap(request: Request): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const { key, value } of request.metadata) {
    const values = map.get(key);
    if (values) values.push(value);
    else map.set(key, [value]);
  }
  return map;
}

function createOutput(schema: DescMessage, output: unknown) {
  if (output === undefined || output === null) {
    throw new TtrpcError("handler returned no message", Code.INTERNAL);
  }
  // biome-ignore lint/suspicious/noExplicitAny: init shapes are checked by ServiceImpl.
  return create(schema, output as any);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
