/**
 * The client side of one upstream connection, for forwarding: requests go
 * out as the encoded `ttrpc.Request` they are, answers come back as the
 * encoded `ttrpc.Response` the upstream sent, untouched. Protocol only:
 * bytes arrive through {@link UpstreamCalls.receive} and leave through
 * `write`. Stream ids are odd and increasing in wire order (taken and
 * written in one synchronous step), as Go's server requires.
 */
import { Code, TtrpcError } from "../ttrpc/codes";
import { encodeFrame, FrameDecoder, FrameType, MAX_DATA_LENGTH } from "../ttrpc/frame";

interface Pending {
  resolve: (response: Uint8Array) => void;
  reject: (err: TtrpcError) => void;
}

const MAX_STREAM_ID = 0xffff_ffff;

export interface UpstreamCallsOptions {
  /** Writes one whole frame to the upstream. */
  write: (frame: Uint8Array) => void;
  /** Names the upstream in errors, e.g. `unix:///run/kata-agent.sock`. */
  upstream: string;
}

export class UpstreamCalls {
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private nextStreamId = 1;
  private closedWith: TtrpcError | undefined;

  constructor(private readonly options: UpstreamCallsOptions) {}

  /** Calls sent and neither answered nor forgotten. */
  get activeCalls(): number {
    return this.pending.size;
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /** Bytes held for an answer being received (at most one frame). */
  get heldBytes(): number {
    return this.decoder.heldBytes;
  }

  /**
   * Sends `request` (an encoded ttrpc.Request) and resolves with the
   * encoded ttrpc.Response. `id` is told the stream id first, for
   * {@link forget}. Rejects UNAVAILABLE when the connection closes first.
   */
  call(request: Uint8Array, id?: (streamId: number) => void): Promise<Uint8Array> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (this.nextStreamId > MAX_STREAM_ID) {
      // Go's server refuses a stream id that does not increase: a new connection is due.
      const err = new TtrpcError(
        `upstream ${this.options.upstream}: stream ids exhausted`,
        Code.UNAVAILABLE,
      );
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
        this.options.write(frame);
      } catch (err) {
        this.pending.delete(streamId);
        reject(
          new TtrpcError(`upstream ${this.options.upstream}: write failed`, Code.UNAVAILABLE, {
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

  /** Feeds bytes read from the upstream. Stray frames are dropped. */
  receive(chunk: Uint8Array): void {
    for (const frame of this.decoder.push(chunk)) {
      const pending = this.pending.get(frame.streamId);
      if (pending === undefined) continue;
      if (frame.kind === "oversize") {
        this.pending.delete(frame.streamId);
        pending.reject(
          new TtrpcError(
            `upstream ${this.options.upstream}: answer of ${frame.length} bytes exceeds the maximum message size of ${MAX_DATA_LENGTH}`,
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

  /** Fails every pending call, and all later ones, with `reason`. */
  close(reason: TtrpcError): void {
    if (this.closedWith) return;
    this.closedWith = reason;
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(reason);
  }
}
