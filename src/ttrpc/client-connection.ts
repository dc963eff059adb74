/**
 * One ttRPC connection, client side. Protocol only: the transport feeds
 * bytes to {@link ClientConnection.receive} and carries what `write` emits.
 * Stream ids are odd and strictly increasing in wire order, because the id
 * is taken and the frame written in the same synchronous step.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { RequestSchema, ResponseSchema } from "../gen/ttrpc_pb";
import { Code, TtrpcError } from "./codes";
import { encodeFrame, FrameDecoder, FrameType } from "./frame";
import { statusToError } from "./status";

export interface CallOptions {
  /** Milliseconds until the call fails with DEADLINE_EXCEEDED; sent as timeout_nano. */
  timeoutMs?: number;
  signal?: AbortSignal;
  metadata?: Record<string, string | string[]>;
}

interface Pending {
  resolve: (payload: Uint8Array) => void;
  reject: (err: TtrpcError) => void;
}

const MAX_STREAM_ID = 0xffff_ffff;

export class ClientConnection {
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private nextStreamId = 1;
  private closedWith: TtrpcError | undefined;

  constructor(private readonly write: (frame: Uint8Array) => void) {}

  /** Calls sent and not yet answered. */
  get activeCalls(): number {
    return this.pending.size;
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /** Sends one unary request and resolves with the response payload. */
  call(
    service: string,
    method: string,
    payload: Uint8Array,
    options: CallOptions = {},
  ): Promise<Uint8Array> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (this.nextStreamId > MAX_STREAM_ID) {
      return Promise.reject(
        new TtrpcError("stream ids exhausted: reconnect", Code.RESOURCE_EXHAUSTED),
      );
    }
    const { timeoutMs, signal } = options;
    if (signal?.aborted) return Promise.reject(TtrpcError.from(signal.reason));

    const streamId = this.nextStreamId;
    this.nextStreamId += 2;
    const request = create(RequestSchema, {
      service,
      method,
      payload,
      timeoutNano: timeoutMs !== undefined ? BigInt(Math.round(timeoutMs * 1e6)) : 0n,
      metadata: Object.entries(options.metadata ?? {}).flatMap(([key, v]) =>
        (Array.isArray(v) ? v : [v]).map((value) => ({ key, value })),
      ),
    });
    const frame = encodeFrame(streamId, FrameType.Request, 0, toBinary(RequestSchema, request));

    return new Promise<Uint8Array>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => fail(TtrpcError.from(signal?.reason));
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.pending.delete(streamId);
      };
      const fail = (err: TtrpcError) => {
        settle();
        reject(err);
      };
      this.pending.set(streamId, {
        resolve: (p) => {
          settle();
          resolve(p);
        },
        reject: fail,
      });
      // A delay over 2^31-1 ms would overflow the timer and fire at once.
      if (timeoutMs !== undefined && timeoutMs <= 0x7fff_ffff) {
        timer = setTimeout(
          () => fail(new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED)),
          timeoutMs,
        );
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        this.write(frame);
      } catch (err) {
        fail(new TtrpcError(`write failed: ${String(err)}`, Code.UNAVAILABLE, { cause: err }));
      }
    });
  }

  /** Feeds bytes read from the server. Stray or malformed frames are dropped. */
  receive(chunk: Uint8Array): void {
    for (const frame of this.decoder.push(chunk)) {
      const pending = this.pending.get(frame.streamId);
      if (pending === undefined) continue;
      if (frame.kind === "oversize") {
        pending.reject(
          new TtrpcError(`response length ${frame.length} too large`, Code.RESOURCE_EXHAUSTED),
        );
        continue;
      }
      if (frame.type !== FrameType.Response) continue;
      try {
        const response = fromBinary(ResponseSchema, frame.data);
        const err = statusToError(response.status);
        if (err) pending.reject(err);
        else pending.resolve(response.payload);
      } catch (err) {
        pending.reject(
          new TtrpcError(`bad response: ${String(err)}`, Code.INTERNAL, { cause: err }),
        );
      }
    }
  }

  /** Fails every pending call and all later ones with UNAVAILABLE (or `reason`). */
  close(reason?: unknown): void {
    if (this.closedWith) return;
    this.closedWith =
      reason === undefined
        ? new TtrpcError("connection closed", Code.UNAVAILABLE)
        : reason instanceof TtrpcError
          ? reason
          : new TtrpcError(`connection closed: ${String(reason)}`, Code.UNAVAILABLE, {
              cause: reason,
            });
    for (const p of [...this.pending.values()]) p.reject(this.closedWith);
  }
}
