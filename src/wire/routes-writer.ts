/**
 * grpc.Routes written by hand for the common shape (fields in number
 * order, zero values left out, as toBinary writes them): the answer to
 * UpdateRoutes and ListRoutes, 10,000 routes and more. Non-ASCII text and
 * any value toBinary would refuse return undefined, and the caller uses
 * toBinary, whose bytes or error stand. Where this answers, the bytes are
 * toBinary's: test/unit/routes-codec.test.ts.
 */
import { RoutesSchema } from "../gen/agent_pb";
import { RouteSchema } from "../gen/types_pb";
import type { RouteMessage } from "./routes-reader";

const ROUTES = RoutesSchema.typeName;
const ROUTE = RouteSchema.typeName;

/** Bytes of a varint. */
function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

const isUint32 = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
function isAscii(s: unknown): s is string {
  if (typeof s !== "string") return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** A field's bytes with its tag; none for a zero value (proto3 writes no default). */
const stringSize = (s: string) => (s.length === 0 ? 0 : 1 + varintSize(s.length) + s.length);
const numberSize = (v: number) => (v === 0 ? 0 : 1 + varintSize(v));

/** A route's encoded size, or -1 when toBinary must have it (an odd value or an unknown field). */
function routeSize(r: RouteMessage): number {
  if (r.$typeName !== ROUTE || "$unknown" in r) return -1;
  const { dest, gateway, device, source, scope, family, flags, mtu } = r;
  if (!isAscii(dest) || !isAscii(gateway) || !isAscii(device) || !isAscii(source)) return -1;
  if (!isUint32(scope) || !isUint32(flags) || !isUint32(mtu)) return -1;
  if (!isUint32(family) || family > 0x7fffffff) return -1;
  return (
    stringSize(dest) +
    stringSize(gateway) +
    stringSize(device) +
    stringSize(source) +
    numberSize(scope) +
    numberSize(family) +
    numberSize(flags) +
    numberSize(mtu)
  );
}

/** Write position in `out`, the answer being written. */
let out = new Uint8Array(0);
let at = 0;

function putVarint(v: number): void {
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[at++] = v;
}

function putString(tag: number, s: string): void {
  if (s.length === 0) return;
  out[at++] = tag;
  putVarint(s.length);
  for (let i = 0; i < s.length; i++) out[at++] = s.charCodeAt(i);
}

function putNumber(tag: number, v: number): void {
  if (v === 0) return;
  out[at++] = tag;
  putVarint(v);
}

/**
 * grpc.Routes as toBinary writes it (fields in number order, zero values
 * left out); undefined when the message is off the common shape.
 */
export function encodeRoutes(message: {
  $typeName: string;
  Routes?: unknown;
}): Uint8Array | undefined {
  if (message.$typeName !== ROUTES || "$unknown" in message || !Array.isArray(message.Routes))
    return undefined;
  const routes = message.Routes as RouteMessage[];
  const sizes = new Array<number>(routes.length);
  let total = 0;
  for (let i = 0; i < routes.length; i++) {
    const size = routeSize(routes[i] as RouteMessage);
    if (size < 0) return undefined;
    sizes[i] = size;
    total += 1 + varintSize(size) + size;
  }
  out = new Uint8Array(total);
  at = 0;
  for (let i = 0; i < routes.length; i++) {
    const r = routes[i] as RouteMessage;
    out[at++] = 0x0a;
    putVarint(sizes[i] as number);
    putString(0x0a, r.dest);
    putString(0x12, r.gateway);
    putString(0x1a, r.device);
    putString(0x22, r.source);
    putNumber(0x28, r.scope);
    putNumber(0x30, r.family);
    putNumber(0x38, r.flags);
    putNumber(0x40, r.mtu);
  }
  const done = out;
  out = new Uint8Array(0); // no hold on the answer
  return done;
}
