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
import { isAscii, isUint32, numberSize, ProtoWriter, stringSize, varintSize } from "./proto-writer";
import type { RouteMessage } from "./routes-reader";

const ROUTES = RoutesSchema.typeName;
const ROUTE = RouteSchema.typeName;

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
  const w = new ProtoWriter(total);
  for (let i = 0; i < routes.length; i++) {
    const r = routes[i] as RouteMessage;
    w.varint(0x0a);
    w.varint(sizes[i] as number);
    w.string(0x0a, r.dest);
    w.string(0x12, r.gateway);
    w.string(0x1a, r.device);
    w.string(0x22, r.source);
    w.number(0x28, r.scope);
    w.number(0x30, r.family);
    w.number(0x38, r.flags);
    w.number(0x40, r.mtu);
  }
  return w.out;
}
