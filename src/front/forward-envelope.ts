/**
 * The two things front mode reads or changes in a forwarded call's
 * envelope, at the wire level so that every other byte passes as it came
 * (unknown fields, metadata that is not valid UTF-8, field order):
 * the request's timeout_nano (field 4 of ttrpc.Request), set to what is
 * left of the caller's deadline, and the status of the upstream's
 * ttrpc.Response, read for logs and metrics. Pure.
 */
import { Code } from "../ttrpc/codes";
import { Cursor } from "../ttrpc/envelope";

/** A cursor over protobuf wire format; -1 from any read means malformed (any varint, up to 10 bytes, is read). */
class Wire extends Cursor {
  constructor(buf: Uint8Array, end: number = buf.length, start = 0) {
    super(buf, start, end, 10);
  }

  /** A varint's low 32 bits as a signed int32 (protobuf's int32 reading); undefined when malformed. */
  int32(): number | undefined {
    let value = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) return undefined;
      const b = this.buf[this.pos++] as number;
      if (i < 5) value |= (b & 0x7f) << (7 * i);
      if (b < 0x80) return value | 0;
    }
    return undefined;
  }

  /** Skips the value of a field of wire type `wt` (groups included); false when malformed. */
  skip(wt: number, field: number): boolean {
    switch (wt) {
      case 0:
        return this.varint() >= 0;
      case 1:
        this.pos += 8;
        return this.pos <= this.end;
      case 2: {
        const len = this.varint();
        if (len < 0 || len > this.end - this.pos) return false;
        this.pos += len;
        return true;
      }
      case 5:
        this.pos += 4;
        return this.pos <= this.end;
      case 3:
        for (;;) {
          const tag = this.varint();
          if (tag < 0) return false;
          if ((tag & 7) === 4) return tag >>> 3 === field;
          if (!this.skip(tag & 7, tag >>> 3)) return false;
        }
      default:
        return false;
    }
  }
}

function varintBytes(n: bigint): number[] {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

/**
 * `request` (an encoded ttrpc.Request) with timeout_nano set to
 * `timeoutNano` (0n: no deadline): every occurrence of field 4 dropped, the
 * new one (if any) appended, every other byte as it came. The same array
 * when there is nothing to change. Throws on malformed input.
 */
export function withTimeout(request: Uint8Array, timeoutNano: bigint): Uint8Array {
  const w = new Wire(request);
  const keep: [number, number][] = [];
  let dropped = false;
  while (w.pos < w.end) {
    const start = w.pos;
    const tag = w.varint();
    if (tag < 0 || !w.skip(tag & 7, tag >>> 3)) throw new Error("malformed ttrpc.Request");
    if (tag >>> 3 === 4) {
      dropped = true;
      continue;
    }
    const last = keep[keep.length - 1];
    if (last !== undefined && last[1] === start) last[1] = w.pos;
    else keep.push([start, w.pos]);
  }
  if (!dropped && timeoutNano === 0n) return request;
  const tail = timeoutNano === 0n ? [] : [0x20, ...varintBytes(timeoutNano)];
  let length = tail.length;
  for (const [a, b] of keep) length += b - a;
  const out = new Uint8Array(length);
  let at = 0;
  for (const [a, b] of keep) {
    out.set(request.subarray(a, b), at);
    at += b - a;
  }
  out.set(tail, at);
  return out;
}

export interface PeekedStatus {
  code: number;
  message: string;
}

const DECODER = new TextDecoder();

/**
 * The status of an encoded ttrpc.Response as a Go or Rust client reads it
 * (absent: OK; repeated fields merge, the last value wins). Malformed
 * input reads as UNKNOWN: the caller still gets the bytes unchanged.
 */
export function peekStatus(response: Uint8Array, maxMessageBytes = 1024): PeekedStatus {
  const bad = { code: Code.UNKNOWN, message: "malformed upstream answer" };
  const w = new Wire(response);
  let code = 0;
  let message = "";
  while (w.pos < w.end) {
    const tag = w.varint();
    if (tag < 0) return bad;
    if (tag !== 0x0a) {
      if (!w.skip(tag & 7, tag >>> 3)) return bad;
      continue;
    }
    const len = w.varint();
    if (len < 0 || len > w.end - w.pos) return bad;
    const s = new Wire(response, w.pos + len, w.pos);
    w.pos += len;
    while (s.pos < s.end) {
      const t = s.varint();
      if (t < 0) return bad;
      if (t === 0x08) {
        const v = s.int32();
        if (v === undefined) return bad;
        code = v;
      } else if (t === 0x12) {
        const l = s.varint();
        if (l < 0 || l > s.end - s.pos) return bad;
        message = DECODER.decode(response.subarray(s.pos, s.pos + Math.min(l, maxMessageBytes)));
        s.pos += l;
      } else if (!s.skip(t & 7, t >>> 3)) return bad;
    }
  }
  return { code, message };
}
