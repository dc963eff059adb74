/**
 * ttRPC framing: a 10-byte header (data length u32 BE, stream id u32 BE,
 * type u8, flags u8) followed by the data. Pure: no sockets here. The
 * flags (0x1 remote closed, 0x2 remote open: a streaming request, 0x4 no
 * data) belong to streams; the frames built here are unary calls', flags 0.
 */

export const HEADER_LENGTH = 10;
/** Largest data a frame may carry; exactly this many bytes is still allowed. */
export const MAX_DATA_LENGTH = 4 << 20;

export enum FrameType {
  Request = 1,
  Response = 2,
  Data = 3,
}

export interface FrameHeader {
  length: number;
  streamId: number;
  type: number;
  flags: number;
}

export interface Frame extends FrameHeader {
  data: Uint8Array;
}

/** What the decoder yields: a whole frame, or word that one was too large
 * (its body is skipped without being buffered). */
export type DecodedFrame = ({ kind: "frame" } & Frame) | ({ kind: "oversize" } & FrameHeader);

/** Encodes one frame; throws RangeError when the data exceeds the limit. */
export function encodeFrame(
  streamId: number,
  type: FrameType,
  flags: number,
  data: Uint8Array,
): Uint8Array {
  if (data.length > MAX_DATA_LENGTH) {
    throw new RangeError(
      `message length ${data.length} exceed maximum message size of ${MAX_DATA_LENGTH}`,
    );
  }
  const out = new Uint8Array(HEADER_LENGTH + data.length);
  writeHeader(out, data.length, streamId, type, flags);
  out.set(data, HEADER_LENGTH);
  return out;
}

/** What a partial body's buffer starts at; it doubles as bytes arrive. */
export const INITIAL_BODY_BUFFER = 4096;

/**
 * Writes a frame header at the start of `out`. Byte by byte rather than
 * through a DataView: JSC materialises a typed array's `.buffer` on first
 * use, a cost every Check would pay.
 */
export function writeHeader(
  out: Uint8Array,
  length: number,
  streamId: number,
  type: number,
  flags: number,
): void {
  writeU32(out, 0, length);
  writeU32(out, 4, streamId);
  out[8] = type;
  out[9] = flags;
}

function writeU32(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 0xff;
  out[at + 2] = (v >>> 8) & 0xff;
  out[at + 3] = v & 0xff;
}

function readU32(b: Uint8Array, at: number): number {
  return (
    (b[at] as number) * 0x100_0000 +
    (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number))
  );
}

/**
 * A push decoder: feed it chunks as they arrive, get whole frames back.
 * Memory held is bounded by one header plus one frame of at most
 * {@link MAX_DATA_LENGTH}: an oversize frame's body is counted and dropped.
 * A partial body's buffer grows with the bytes received (doubling, capped
 * at the announced length), never allocated up front from the header: ten
 * bytes announcing 4 MiB cost 4 KiB, not 4 MiB.
 */
export class FrameDecoder {
  private readonly header = new Uint8Array(HEADER_LENGTH);
  private headerFill = 0;
  private current: FrameHeader | undefined;
  private body: Uint8Array | undefined;
  private bodyFill = 0;
  /** Length announced by the current frame's header. */
  private bodyLength = 0;
  /** Bytes of an oversize body still to skip. */
  private skip = 0;

  /** Bytes held for the frame being received (its body buffer's size). */
  get heldBytes(): number {
    return this.body?.length ?? 0;
  }

  /** True while part of a frame has been received but not all of it. */
  get pending(): boolean {
    return this.headerFill > 0 || this.current !== undefined;
  }

  push(chunk: Uint8Array): DecodedFrame[] {
    const out: DecodedFrame[] = [];
    let pos = 0;
    while (pos < chunk.length) {
      if (this.current === undefined) {
        let header: FrameHeader;
        if (this.headerFill === 0 && chunk.length - pos >= HEADER_LENGTH) {
          // Common case: the whole header is in this chunk; read it in place.
          header = {
            length: readU32(chunk, pos),
            streamId: readU32(chunk, pos + 4),
            type: chunk[pos + 8] as number,
            flags: chunk[pos + 9] as number,
          };
          pos += HEADER_LENGTH;
        } else {
          const take = Math.min(HEADER_LENGTH - this.headerFill, chunk.length - pos);
          this.header.set(chunk.subarray(pos, pos + take), this.headerFill);
          this.headerFill += take;
          pos += take;
          if (this.headerFill < HEADER_LENGTH) break;
          this.headerFill = 0;
          header = {
            length: readU32(this.header, 0),
            streamId: readU32(this.header, 4),
            type: this.header[8] as number,
            flags: this.header[9] as number,
          };
        }
        const { length, streamId, type, flags } = header;
        if (length > MAX_DATA_LENGTH) {
          out.push({ kind: "oversize", length, streamId, type, flags });
          this.skip = length;
          this.current = header;
        } else if (length === 0) {
          out.push({ kind: "frame", length, streamId, type, flags, data: new Uint8Array(0) });
        } else if (chunk.length - pos >= length) {
          // Common case: the whole body is in this chunk; copy once, no staging.
          const data = chunk.slice(pos, pos + length);
          out.push({ kind: "frame", length, streamId, type, flags, data });
          pos += length;
        } else {
          this.current = header;
          this.bodyLength = length;
          this.body = new Uint8Array(Math.min(length, INITIAL_BODY_BUFFER));
          this.bodyFill = 0;
        }
        continue;
      }
      if (this.skip > 0) {
        const take = Math.min(this.skip, chunk.length - pos);
        this.skip -= take;
        pos += take;
        if (this.skip === 0) this.current = undefined;
        continue;
      }
      const take = Math.min(this.bodyLength - this.bodyFill, chunk.length - pos);
      const body = this.room(this.bodyFill + take);
      body.set(chunk.subarray(pos, pos + take), this.bodyFill);
      this.bodyFill += take;
      pos += take;
      if (this.bodyFill === this.bodyLength) {
        const { length, streamId, type, flags } = this.current;
        out.push({ kind: "frame", length, streamId, type, flags, data: body });
        this.current = undefined;
        this.body = undefined;
      }
    }
    return out;
  }

  /** The body buffer, grown (doubling, at most the announced length) to hold `need` bytes. */
  private room(need: number): Uint8Array {
    const body = this.body as Uint8Array;
    if (need <= body.length) return body;
    let size = body.length;
    while (size < need) size *= 2;
    const grown = new Uint8Array(Math.min(size, this.bodyLength));
    grown.set(body.subarray(0, this.bodyFill));
    this.body = grown;
    return grown;
  }
}
