/**
 * netagent.v1.ApplyRequest read by hand where it is large: a whole state
 * of 10,000 routes costs protobuf-es's reflective reader a create() and a
 * field lookup per tag, per route. The routes of the common shape (numbers
 * and ASCII strings, no paths or attributes) and the sysctls of ASCII text
 * (hundreds: every key of every link) are built here; any other route and
 * every other element (interfaces, rules, neighbours, nexthop objects: a
 * few each) is read by fromBinary of its own bytes, as
 * fromBinary of the whole request reads it. Anything off the request's own
 * shape (an unknown or repeated top-level field, a wire type other than
 * the schema's, bytes fromBinary refuses) returns undefined, and the
 * caller decodes the whole request with fromBinary, whose answer or error
 * stands. Entries are counted first (countRepeated, the same bound and
 * refusal as that path). The host reads its answers the same way: the
 * ApplyResponse (its plan lines as ASCII strings) and Get's State. Where
 * this answers, the answer is fromBinary's: test/unit/state-reader.test.ts.
 */
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import {
  ApplyRequestSchema,
  ApplyResponseSchema,
  InterfaceSchema,
  LeftOutSchema,
  NeighborSchema,
  NexthopSchema,
  type Route,
  RouteSchema,
  RuleSchema,
  StateSchema,
  SysctlSchema,
} from "../gen/network_pb";
import { countRepeated } from "../ttrpc/count-repeated";
import { varint32, varintEnd } from "./varint32";

/** Read position in the request being read. */
let pos = 0;
let buf: Uint8Array = new Uint8Array(0);
/** The request's bytes as latin1 text, made at the first string: strings are slices of it. */
let latin1 = "";
/** The string last read per route field: a table names a few links and gateways thousands of times. */
const last: (string | undefined)[] = [];

const NOT_ASCII = /[\u0080-\u00ff]/;

/** `read` over `bytes` from their start; nothing of them is held afterwards. */
function reading(bytes: Uint8Array, read: () => unknown): unknown {
  pos = 0;
  buf = bytes;
  last.length = 0;
  try {
    return read();
  } finally {
    last.length = 0;
    latin1 = "";
    buf = new Uint8Array(0);
  }
}

/** A varint of at most 32 bits at `pos` (moved past it), or -1. */
function varint(end: number): number {
  const v = varint32(buf, pos, end);
  pos = varintEnd;
  return v;
}

/**
 * An ASCII string of `len` bytes at `pos`, or undefined. The last string of
 * each route field past dest (3, each route's own) is kept; 0 keeps none.
 */
function ascii(len: number, field: number): string | undefined {
  const start = pos;
  pos += len;
  if (latin1 === "")
    latin1 = Buffer.from(buf.buffer, buf.byteOffset, buf.length).toString("latin1");
  const prev = last[field];
  if (prev !== undefined && prev.length === len && latin1.startsWith(prev, start)) return prev;
  const text = latin1.slice(start, pos);
  if (NOT_ASCII.test(text)) return undefined;
  if (field > 3) last[field] = text;
  return text;
}

/** Route fields read by hand: 1 for a varint, 2 for a string (0: left to fromBinary). */
const ROUTE_WIRE = [0, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 2, 0, 0, 1, 1, 2];

/** A route of the common shape, as fromBinary builds it (every field, declaration order); else undefined. */
function plainRoute(end: number): Route | undefined {
  const r: Route = {
    $typeName: RouteSchema.typeName,
    table: 0,
    family: 0,
    dest: "",
    gateway: "",
    device: "",
    source: "",
    metric: 0,
    type: 0,
    scope: 0,
    onlink: false,
    mtu: 0,
    protocol: "",
    attrs: [],
    hops: [],
    nhid: 0,
    tos: 0,
    from: "",
  };
  while (pos < end) {
    const tag = varint(end);
    const field = tag >>> 3;
    const wire = tag < 0 ? 0 : (ROUTE_WIRE[field] ?? 0);
    if (wire === 0 || (tag & 7) !== (wire === 1 ? 0 : 2)) return undefined;
    const v = varint(end);
    if (v < 0) return undefined;
    if (wire === 2) {
      if (pos + v > end) return undefined;
      const s = ascii(v, field);
      if (s === undefined) return undefined;
      if (field === 3) r.dest = s;
      else if (field === 4) r.gateway = s;
      else if (field === 5) r.device = s;
      else if (field === 6) r.source = s;
      else if (field === 12) r.protocol = s;
      else r.from = s;
      continue;
    }
    if (field === 1) r.table = v;
    else if (field === 2) r.family = v;
    else if (field === 7) r.metric = v;
    else if (field === 8)
      r.type = v | 0; // an enum is read as int32
    else if (field === 9) r.scope = v;
    else if (field === 10) r.onlink = v !== 0;
    else if (field === 11) r.mtu = v;
    else if (field === 15) r.nhid = v;
    else r.tos = v;
  }
  return pos === end ? r : undefined;
}

/**
 * A sysctl of ASCII text, as fromBinary builds it (both fields, the last
 * of a repeated one kept); else undefined. A state holds hundreds, and
 * fromBinary's set-up for each, run cold, adds up to milliseconds an
 * answer (bench/README.md, row 12).
 */
function plainSysctl(end: number): unknown {
  const s = { $typeName: SysctlSchema.typeName, key: "", value: "" };
  while (pos < end) {
    const tag = buf[pos++] as number;
    if (tag !== 0x0a && tag !== 0x12) return undefined;
    const stop = fieldEnd(end);
    if (stop < 0) return undefined;
    const text = ascii(stop - pos, 0);
    if (text === undefined) return undefined;
    if (tag === 0x0a) s.key = text;
    else s.value = text;
  }
  return s;
}

/** Where the length-delimited field whose length is at `pos` ends, or -1 past `end`. */
function fieldEnd(end: number): number {
  const n = varint(end);
  return n < 0 || pos + n > end ? -1 : pos + n;
}

/** One element by fromBinary of its own bytes, or undefined when fromBinary refuses them. */
function element<T>(schema: DescMessage, end: number): T | undefined {
  try {
    return fromBinary(schema, buf.subarray(pos, end)) as T;
  } catch {
    return undefined;
  } finally {
    pos = end;
  }
}

const STATE_LISTS: readonly (DescMessage | undefined)[] = [
  undefined,
  InterfaceSchema,
  RouteSchema,
  RuleSchema,
  NeighborSchema,
  SysctlSchema,
  NexthopSchema,
];

function state(end: number): unknown {
  const lists: unknown[][] = [[], [], [], [], [], [], []];
  while (pos < end) {
    const tag = buf[pos++] as number;
    const field = tag >> 3;
    const schema = STATE_LISTS[field];
    if ((tag & 0x80) !== 0 || (tag & 7) !== 2 || schema === undefined) return undefined;
    const stop = fieldEnd(end);
    if (stop < 0) return undefined;
    let item: unknown;
    if (field === 2 || field === 5) {
      const start = pos;
      item = field === 2 ? plainRoute(stop) : plainSysctl(stop);
      if (item === undefined) {
        pos = start;
        item = element(schema, stop);
      }
    } else item = element(schema, stop);
    if (item === undefined) return undefined;
    pos = stop;
    (lists[field] as unknown[]).push(item);
  }
  if (pos !== end) return undefined;
  const [, interfaces, routes, rules, neighbors, sysctls, nexthops] = lists;
  return {
    $typeName: StateSchema.typeName,
    interfaces,
    routes,
    rules,
    neighbors,
    sysctls,
    nexthops,
  };
}

/**
 * An ApplyRequest with its desired state, as fromBinary would give it;
 * undefined for anything else (the caller decodes with fromBinary). Throws
 * countRepeated's RESOURCE_EXHAUSTED for more than `limit` entries of a field.
 */
export function decodeApplyRequest(bytes: Uint8Array, limit = Infinity): unknown {
  if (bytes.length === 0) return undefined;
  countRepeated(ApplyRequestSchema, bytes, limit);
  return reading(bytes, () => {
    const out: Record<string, unknown> = {
      $typeName: ApplyRequestSchema.typeName,
      dryRun: false,
      exact: false,
      bestEffort: false,
    };
    let desired: unknown;
    while (pos < bytes.length) {
      const tag = bytes[pos++] as number;
      const field = tag >> 3;
      if (field === 1 && tag === 0x0a && desired === undefined) {
        const stop = fieldEnd(bytes.length);
        desired = stop < 0 ? undefined : state(stop);
        if (desired === undefined) return undefined;
        continue;
      }
      if ((tag & 0x80) !== 0 || (tag & 7) !== 0 || field < 2 || field > 4) return undefined;
      const v = varint(bytes.length);
      if (v < 0) return undefined;
      out[field === 2 ? "dryRun" : field === 3 ? "exact" : "bestEffort"] = v !== 0;
    }
    if (desired === undefined) return undefined;
    out.desired = desired;
    return out;
  });
}

/**
 * An ApplyResponse (the host's answer to Apply: the state read back and the
 * plan, 10,000 lines) as fromBinary would give it; undefined for anything
 * off its shape (another field, a repeated result, a non-ASCII plan line),
 * and the caller decodes with fromBinary. No count: the host's fromBinary
 * path has none.
 */
export function decodeApplyResponse(bytes: Uint8Array): unknown {
  return reading(bytes, () => {
    const plan: string[] = [];
    const leftOut: unknown[] = [];
    let result: unknown;
    while (pos < bytes.length) {
      const tag = bytes[pos++] as number;
      if (tag !== 0x0a && tag !== 0x12 && tag !== 0x1a) return undefined;
      const stop = fieldEnd(bytes.length);
      if (stop < 0) return undefined;
      let item: unknown;
      if (tag === 0x0a) {
        if (result !== undefined) return undefined; // fromBinary merges the two
        result = state(stop);
        item = result;
      } else if (tag === 0x12) {
        item = ascii(stop - pos, 0);
        if (item !== undefined) plan.push(item as string);
      } else {
        item = element(LeftOutSchema, stop);
        if (item !== undefined) leftOut.push(item);
      }
      if (item === undefined) return undefined;
    }
    const out: Record<string, unknown> = { $typeName: ApplyResponseSchema.typeName, plan, leftOut };
    if (result !== undefined) out.result = result;
    return out;
  });
}

/** A State (the answer to Get) as fromBinary would give it; undefined as decodeApplyResponse. */
export function decodeState(bytes: Uint8Array): unknown {
  return reading(bytes, () => state(bytes.length));
}
