/**
 * grpc.UpdateRoutesRequest read by hand for the common shape: over 10,000
 * routes, protobuf-es's reflective reader (a create() and a character
 * array per string, a field lookup per tag) was the largest cost of a call
 * left in JavaScript. Anything off the common shape (an unknown or
 * repeated top-level field, a wire type other than the schema's, a
 * non-ASCII string, a varint longer than 32 bits, an empty route, more
 * routes than the limit) returns undefined and the caller uses fromBinary,
 * whose answer or error stands. Where this answers, the answer is
 * fromBinary's: test/unit/routes-codec.test.ts.
 */
import { RoutesSchema, UpdateRoutesRequestSchema } from "../gen/agent_pb";
import { RouteSchema } from "../gen/types_pb";
import { varint32, varintEnd } from "./varint32";

const REQUEST = UpdateRoutesRequestSchema.typeName;
const ROUTES = RoutesSchema.typeName;
const ROUTE = RouteSchema.typeName;

/** A decoded types.Route, as fromBinary builds it (every field, declaration order). */
export interface RouteMessage {
  $typeName: typeof ROUTE;
  dest: string;
  gateway: string;
  device: string;
  source: string;
  scope: number;
  family: number;
  flags: number;
  mtu: number;
}

/** Read position in the request being read. */
let pos = 0;

/** A varint of at most 32 bits at `pos` (moved past it), or -1. */
function varint(buf: Uint8Array, end: number): number {
  const v = varint32(buf, pos, end);
  pos = varintEnd;
  return v;
}

/**
 * The request's bytes as latin1 text, converted natively at the first
 * string (a refused flood of empty routes never gets there): strings are
 * slices of it.
 */
let latin1 = "";
let bytes: Uint8Array | undefined;

/** A byte past ASCII, in latin1 text: such a string is left to protobuf-es (UTF-8). */
const NOT_ASCII = /[\u0080-\u00ff]/;

/**
 * The string last read per field (gateway, device, source): a table names
 * a handful of gateways and links thousands of times, so the same bytes
 * give back the same string instead of a new one.
 */
const last: (string | undefined)[] = [];

/** An ASCII string of `len` bytes at `pos` for field `field`, or undefined. */
function ascii(len: number, field: number): string | undefined {
  const start = pos;
  pos += len;
  if (latin1 === "" && bytes !== undefined) {
    latin1 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
  }
  const prev = last[field];
  if (prev !== undefined && prev.length === len && latin1.startsWith(prev, start)) return prev;
  const text = latin1.slice(start, pos);
  if (NOT_ASCII.test(text)) return undefined;
  if (field !== 1) last[field] = text;
  return text;
}

function decodeRoute(buf: Uint8Array, end: number): RouteMessage | undefined {
  const r: RouteMessage = {
    $typeName: ROUTE,
    dest: "",
    gateway: "",
    device: "",
    source: "",
    scope: 0,
    family: 0,
    flags: 0,
    mtu: 0,
  };
  while (pos < end) {
    const tag = buf[pos++] as number;
    const field = tag >> 3;
    if ((tag & 0x80) !== 0 || field < 1 || field > 8) return undefined;
    const v = varint(buf, end);
    if (v < 0) return undefined;
    if (field <= 4) {
      if ((tag & 7) !== 2 || pos + v > end) return undefined;
      const s = ascii(v, field);
      if (s === undefined) return undefined;
      if (field === 1) r.dest = s;
      else if (field === 2) r.gateway = s;
      else if (field === 3) r.device = s;
      else r.source = s;
    } else {
      if ((tag & 7) !== 0) return undefined;
      if (field === 5) r.scope = v;
      else if (field === 6)
        r.family = v | 0; // an enum is read as int32
      else if (field === 7) r.flags = v;
      else r.mtu = v;
    }
  }
  return pos === end ? r : undefined;
}

/**
 * grpc.UpdateRoutesRequest with its one `routes` field, as fromBinary would
 * give it; undefined for anything else (the caller decodes with fromBinary),
 * and for more than `limit` routes (its only repeated field: the caller's
 * countRepeated refuses those, so a request read here needs no count).
 */
export function decodeUpdateRoutesRequest(buf: Uint8Array, limit = Infinity): unknown {
  pos = 0;
  last.length = 0;
  bytes = buf;
  try {
    if (buf.length === 0 || buf[pos++] !== 0x0a) return undefined;
    const len = varint(buf, buf.length);
    if (len < 0 || pos + len !== buf.length) return undefined;
    const Routes: RouteMessage[] = [];
    while (pos < buf.length) {
      if (buf[pos++] !== 0x0a) return undefined;
      const n = varint(buf, buf.length);
      // An empty route (`0a 00`: two bytes an entry, the cheapest flood) is
      // not the common shape: countRepeated counts those before any is built.
      if (n <= 0 || pos + n > buf.length) return undefined;
      const route = decodeRoute(buf, pos + n);
      // Past the agent's limit on entries: countRepeated words the refusal.
      if (route === undefined || Routes.length === limit) return undefined;
      Routes.push(route);
    }
    return { $typeName: REQUEST, routes: { $typeName: ROUTES, Routes } };
  } finally {
    last.length = 0; // no hold on the request's text
    latin1 = "";
    bytes = undefined;
  }
}
