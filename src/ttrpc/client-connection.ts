/**
 * One ttRPC connection, client side: the one in the project (the typed
 * client and front mode's upstream both run on it). Protocol only: the
 * transport feeds bytes to {@link ClientConnection.receive} and carries
 * what `write` emits. Stream ids are odd and strictly increasing in wire
 * order, because the id is taken and the frame written in the same
 * synchronous step (Go's server refuses one that does not increase).
 *
 * Two levels: {@link ClientConnection.send} takes an encoded
 * `ttrpc.Request` and answers the encoded `ttrpc.Response` as it came
 * (front mode forwards both untouched); {@link ClientConnection.call}
 * builds the Request, keeps its deadline and signal, and turns the
 * Response's status into a value or a {@link TtrpcError}.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { RequestSchema, ResponseSchema } from "../gen/ttrpc_pb";
import { Code, TtrpcError } from "./codes";
import { encodeFrame, FrameDecoder, FrameType, MAX_DATA_LENGTH } from "./frame";
import { statusToError } from "./status";

export interface CallOptions {
  /** Milliseconds until the call fails with DEADLINE_EXCEEDED; sent as timeout_nano. */
  timeoutMs?: number;
  signal?: AbortSignal;
  metadata?: Record<string, string | string[]>;
}

export interface ClientConnectionOptions {
  /**
   * Names the peer at the start of this connection's own errors, e.g.
   * `upstream unix:///run/kata-agent.sock`; without it they are bare.
   */
  peer?: string;
  /**
   * When stream ids run out: close the connection (every call fails
   * UNAVAILABLE, the owner reconnects) instead of refusing new calls
   * RESOURCE_EXHAUSTED while the calls in flight finish.
   */
  closeWhenIdsRunOut?: boolean;
}

interface Pending {
  resolve: (response: Uint8Array) => void;
  reject: (err: TtrpcError) => void;
}

const MAX_STREAM_ID = 0xffff_ffff;

export class ClientConnection {
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private nextStreamId = 1;
  private closedWith: TtrpcError | undefined;
  private readonly write: (frame: Uint8Array) => void;
  private readonly options: ClientConnectionOptions;

  constructor(write: (frame: Uint8Array) => void, options: ClientConnectionOptions = {}) {
    this.write = write;
    this.options = options;
  }

  /** Calls sent and neither answered nor forgotten. */
  get activeCalls(): number {
    return this.pending.size;
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /**
   * Sends `request` (an encoded ttrpc.Request) and resolves with the
   * encoded ttrpc.Response, whatever its status. `id` is told the stream
   * id first, for {@link forget}. Rejects UNAVAILABLE when the connection
   * closes first, RESOURCE_EXHAUSTED for an answer over the frame limit.
   */
  send(request: Uint8Array, id?: (streamId: number) => void): Promise<Uint8Array> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (this.nextStreamId > MAX_STREAM_ID) {
      if (!this.options.closeWhenIdsRunOut) {
        return Promise.reject(
          new TtrpcError(this.named("stream ids exhausted: reconnect"), Code.RESOURCE_EXHAUSTED),
        );
      }
      const err = new TtrpcError(this.named("stream ids exhausted"), Code.UNAVAILABLE);
      this.close(err);
      return Promise.reject(err);
    }
    const streamId = this.nextStreamId;
    this.nextStreamId += 2;
    const frame = encodeFrame(streamId, FrameType.Request, 0, request);
    id?.(streamId);
    return new Promise<Uint8Array>((resolve, reject) => {
      this.pending.set(streamId, { resolve, reject });
      try {
        this.write(frame);
      } catch (err) {
        this.pending.delete(streamId);
        reject(
          new TtrpcError(this.named(`write failed: ${String(err)}`), Code.UNAVAILABLE, {
            cause: err,
          }),
        );
      }
    });
  }

  /** The caller gave up on `streamId`: its answer, should one come, is dropped. */
  forget(streamId: number): void {
    this.pending.delete(streamId);
  }

  /** Sends one unary request and resolves with the response payload. */
  call(
    service: string,
    method: string,
    payload: Uint8Array,
    options: CallOptions = {},
  ): Promise<Uint8Array> {
    const { timeoutMs, signal } = options;
    if (signal?.aborted && !this.closedWith) return Promise.reject(TtrpcError.from(signal.reason));
    const request = create(RequestSchema, {
      service,
      method,
      payload,
      timeoutNano: timeoutMs !== undefined ? BigInt(Math.round(timeoutMs * 1e6)) : 0n,
      metadata: Object.entries(options.metadata ?? {}).flatMap(([key, v]) =>
        (Array.isArray(v) ? v : [v]).map((value) => ({ key, value })),
      ),
    });
    let streamId = 0;
    const answer = this.send(toBinary(RequestSchema, request), (id) => {
      streamId = id;
    });
    return new Promise<Uint8Array>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const fail = (err: TtrpcError) => {
        settle();
        this.forget(streamId);
        reject(err);
      };
      const onAbort = () => fail(TtrpcError.from(signal?.reason));
      answer.then((response) => {
        settle();
        try {
          const decoded = fromBinary(ResponseSchema, response);
          const err = statusToError(decoded.status);
          if (err) reject(err);
          else resolve(decoded.payload);
        } catch (err) {
          reject(new TtrpcError(`bad response: ${String(err)}`, Code.INTERNAL, { cause: err }));
        }
      }, fail);
      // A delay over 2^31-1 ms would overflow the timer and fire at once.
      if (timeoutMs !== undefined && timeoutMs <= 0x7fff_ffff) {
        timer = setTimeout(
          () => fail(new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED)),
          timeoutMs,
        );
      }
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Feeds bytes read from the server. Stray frames are dropped. */
  receive(chunk: Uint8Array): void {
    for (const frame of this.decoder.push(chunk)) {
      const pending = this.pending.get(frame.streamId);
      if (pending === undefined) continue;
      if (frame.kind === "oversize") {
        this.pending.delete(frame.streamId);
        pending.reject(
          new TtrpcError(
            this.named(
              `answer of ${frame.length} bytes exceeds the maximum message size of ${MAX_DATA_LENGTH}`,
            ),
            Code.RESOURCE_EXHAUSTED,
          ),
        );
        continue;
      }
      if (frame.type !== FrameType.Response) continue;
      this.pending.delete(frame.streamId);
      pending.resolve(frame.data);
    }
  }

  /** Fails every pending call and all later ones with UNAVAILABLE (or `reason`). */
  close(reason?: unknown): void {
    if (this.closedWith) return;
    this.closedWith =
      reason === undefined
        ? new TtrpcError(this.named("connection closed"), Code.UNAVAILABLE)
        : reason instanceof TtrpcError
          ? reason
          : new TtrpcError(this.named(`connection closed: ${String(reason)}`), Code.UNAVAILABLE, {
              cause: reason,
            });
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(this.closedWith);
  }

  private named(text: string): string {
    return this.options.peer === undefined ? text : `${this.options.peer}: ${text}`;
  }
}
