/**
 * The ttRPC envelope on the server's hot path: decoding `ttrpc.Request` and
 * encoding an OK `ttrpc.Response` straight into its frame.
 *
 * Why not only @bufbuild/protobuf: for a message as small as the envelope,
 * fromBinary's set-up (a DataView over the chunk, whose `.buffer` JSC
 * materialises per call) and building the Response cost more than the
 * call itself (figures: bench/README.md). The envelope is five fields; the fast path reads the shape
 * every client sends (known fields, right wire types, ASCII strings,
 * non-negative timeouts below 2^53 ns) and hands anything else to the
 * library, so odd input decodes, or fails, exactly as the library says.
 * test/unit/envelope.test.ts checks both paths agree on arbitrary and
 * mutated input.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { RequestSchema } from "../gen/ttrpc_pb";
import { AsciiNames, asciiText } from "./ascii-names";
import { Code, TtrpcError } from "./codes";
import { countRepeated } from "./count-repeated";
import { FrameType, HEADER_LENGTH, MAX_DATA_LENGTH, writeHeader } from "./frame";

/** What the server uses of a ttrpc.Request. */
export interface RequestEnvelope {
  service: string;
  method: string;
  payload: Uint8Array;
  timeoutNano: bigint;
  metadata: { key: string; value: string }[];
}

const EMPTY = new Uint8Array(0);
/** Service and method names seen (shared: every connection's clients use the same few). */
const NAMES = new AsciiNames();

/**
 * Decodes a ttrpc.Request; throws the library's error on malformed input,
 * RESOURCE_EXHAUSTED when it holds more than `maxRepeated` metadata entries.
 */
export function decodeRequest(data: Uint8Array, maxRepeated: number): RequestEnvelope {
  const fast = decodeFast(data);
  if (fast && fast.metadata.length <= maxRepeated) return fast;
  countRepeated(RequestSchema, data, maxRepeated);
  const r = fromBinary(RequestSchema, data);
  return {
    service: r.service,
    method: r.method,
    payload: r.payload,
    timeoutNano: r.timeoutNano,
    metadata: r.metadata.map(({ key, value }) => ({ key, value })),
  };
}

/**
 * A cursor over one buffer; every read returns -1 (or undefined) when the
 * input is unusual. A varint longer than `varintBytes` is unusual: 7 (below
 * 2^49) where anything larger is left to the library; 10 (any varint, exact
 * below 2^53) where every byte must be walked (front mode's envelopes).
 */
export class Cursor {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
    readonly varintBytes = 7,
  ) {
    this.pos = start;
  }

  /** A varint of at most `varintBytes` bytes, else -1. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < this.varintBytes; i++) {
      if (this.pos >= this.end) return -1;
      const b = this.buf[this.pos++] as number;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    return -1;
  }

  /** The bounds of a length-delimited value, or -1. */
  span(): number {
    const len = this.varint();
    if (len < 0 || len > this.end - this.pos) return -1;
    const start = this.pos;
    this.pos += len;
    return start;
  }

  /** An ASCII string of [start, pos), or undefined for anything else. */
  ascii(start: number): string | undefined {
    return asciiText(this.buf, start, this.pos);
  }

  /** As {@link ascii}, for a service or method name: the same string for the same bytes. */
  name(start: number): string | undefined {
    return NAMES.text(this.buf, start, this.pos);
  }
}

function decodeFast(data: Uint8Array): RequestEnvelope | undefined {
  const c = new Cursor(data, 0, data.length);
  const r: RequestEnvelope = {
    service: "",
    method: "",
    payload: EMPTY,
    timeoutNano: 0n,
    metadata: [],
  };
  while (c.pos < c.end) {
    const tag = c.varint();
    if (tag === 0x20) {
      const t = c.varint();
      if (t < 0) return undefined;
      r.timeoutNano = BigInt(t);
      continue;
    }
    if ((tag & 7) !== 2) return undefined;
    const start = c.span();
    if (start < 0) return undefined;
    switch (tag >>> 3) {
      case 1: {
        const s = c.name(start);
        if (s === undefined) return undefined;
        r.service = s;
        break;
      }
      case 2: {
        const s = c.name(start);
        if (s === undefined) return undefined;
        r.method = s;
        break;
      }
      case 3:
        r.payload = data.subarray(start, c.pos);
        break;
      case 5: {
        const kv = decodeKeyValue(new Cursor(data, start, c.pos));
        if (!kv) return undefined;
        r.metadata.push(kv);
        break;
      }
      default:
        return undefined;
    }
  }
  return r;
}

function decodeKeyValue(c: Cursor): { key: string; value: string } | undefined {
  let key = "";
  let value = "";
  while (c.pos < c.end) {
    const tag = c.varint();
    if (tag !== 0x0a && tag !== 0x12) return undefined;
    const start = c.span();
    if (start < 0) return undefined;
    const s = c.ascii(start);
    if (s === undefined) return undefined;
    if (tag === 0x0a) key = s;
    else value = s;
  }
  return { key, value };
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n >>>= 7;
    len++;
  }
  return len;
}

/**
 * The whole frame of an OK answer: header, then a ttrpc.Response with an
 * empty status (field 1, as Go and Rust send it) and `payload` (field 2,
 * left out when empty, as proto3 does). Throws RESOURCE_EXHAUSTED past the limit.
 */
export function encodeOkResponseFrame(streamId: number, payload: Uint8Array): Uint8Array {
  const body = payload.length === 0 ? 2 : 3 + varintLength(payload.length) + payload.length;
  if (body > MAX_DATA_LENGTH) {
    throw new TtrpcError(
      `response length ${body} exceed maximum message size of ${MAX_DATA_LENGTH}`,
      Code.RESOURCE_EXHAUSTED,
    );
  }
  const out = new Uint8Array(HEADER_LENGTH + body);
  writeHeader(out, body, streamId, FrameType.Response, 0);
  let pos = HEADER_LENGTH;
  out[pos++] = 0x0a;
  out[pos++] = 0x00;
  if (payload.length > 0) {
    out[pos++] = 0x12;
    let n = payload.length;
    while (n >= 0x80) {
      out[pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[pos++] = n;
    // A few bytes (Check's answer is two) are copied faster by hand than by set().
    if (payload.length <= 16)
      for (let i = 0; i < payload.length; i++) out[pos + i] = payload[i] as number;
    else out.set(payload, pos);
  }
  return out;
}
