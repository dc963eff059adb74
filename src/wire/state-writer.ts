/**
 * netagent.v1.ApplyResponse written by hand where it is large: the state
 * read back (10,000 routes) and the plan (10,000 lines). toBinary's bytes,
 * fields in number order and zero values left out: the routes of the
 * common shape (no paths or attributes, ASCII text, uint32 values) and
 * the plan lines (ASCII) are written here; every other route and element
 * is toBinary of its own, framed as toBinary frames it. Anything off the
 * shape (unknown fields, non-ASCII plan text, a value toBinary would
 * refuse in a route written here) returns undefined, and the caller uses
 * toBinary, whose bytes or error stand. Where this answers, the bytes are
 * toBinary's: test/unit/state-writer.test.ts. Get's answer, the State
 * alone, is written the same way, and so is the host's ApplyRequest (its
 * desired State, 10,000 routes; src/client/client.ts).
 */
import { type DescMessage, toBinary } from "@bufbuild/protobuf";
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
  type Sysctl,
  SysctlSchema,
} from "../gen/network_pb";
import {
  boolSize,
  isAscii,
  isUint32,
  numberSize,
  ProtoWriter,
  stringSize,
  varintSize,
} from "./proto-writer";

/** A common route's encoded size, or -1 when toBinary writes it (paths, attributes, an odd value). */
function routeSize(r: Route): number {
  if (r.$typeName !== RouteSchema.typeName || "$unknown" in r) return -1;
  if (!Array.isArray(r.attrs) || r.attrs.length !== 0) return -1;
  if (!Array.isArray(r.hops) || r.hops.length !== 0) return -1;
  const { dest, gateway, device, source, protocol, from } = r;
  if (!isAscii(dest) || !isAscii(gateway) || !isAscii(device) || !isAscii(source)) return -1;
  if (!isAscii(protocol) || !isAscii(from) || typeof r.onlink !== "boolean") return -1;
  const { table, family, metric, type, scope, mtu, nhid, tos } = r;
  if (!isUint32(table) || !isUint32(family) || !isUint32(metric) || !isUint32(scope)) return -1;
  if (!isUint32(mtu) || !isUint32(nhid) || !isUint32(tos)) return -1;
  if (!isUint32(type) || type > 0x7fffffff) return -1;
  return (
    numberSize(table) +
    numberSize(family) +
    stringSize(dest) +
    stringSize(gateway) +
    stringSize(device) +
    stringSize(source) +
    numberSize(metric) +
    numberSize(type) +
    numberSize(scope) +
    boolSize(r.onlink) +
    numberSize(mtu) +
    stringSize(protocol) +
    numberSize(nhid) +
    numberSize(tos, 2) +
    stringSize(from, 2)
  );
}

function putRoute(w: ProtoWriter, r: Route): void {
  w.number(0x08, r.table);
  w.number(0x10, r.family);
  w.string(0x1a, r.dest);
  w.string(0x22, r.gateway);
  w.string(0x2a, r.device);
  w.string(0x32, r.source);
  w.number(0x38, r.metric);
  w.number(0x40, r.type);
  w.number(0x48, r.scope);
  w.bool(0x50, r.onlink);
  w.number(0x58, r.mtu);
  w.string(0x62, r.protocol);
  w.number(0x78, r.nhid);
  w.number(0x80, r.tos); // field 16: tag 0x80 0x01
  w.string(0x8a, r.from); // field 17: tag 0x8a 0x01
}

/**
 * A sysctl's encoded size, or -1 when toBinary writes it (non-ASCII text):
 * a state holds hundreds (every key of every link), and a toBinary of its
 * own for each, run cold, adds up to milliseconds an answer
 * (bench/README.md, row 12).
 */
function sysctlSize(s: Sysctl): number {
  if (s.$typeName !== SysctlSchema.typeName || "$unknown" in s) return -1;
  if (!isAscii(s.key) || !isAscii(s.value)) return -1;
  return stringSize(s.key) + stringSize(s.value);
}

function putSysctl(w: ProtoWriter, s: Sysctl): void {
  w.string(0x0a, s.key);
  w.string(0x12, s.value);
}

/** One element of a list: its tag, and its bytes or (a common route or sysctl) its size. */
interface Piece {
  tag: number;
  bytes?: Uint8Array;
  route?: Route;
  sysctl?: Sysctl;
  size: number;
}

const STATE_LISTS: readonly [string, number, DescMessage][] = [
  ["interfaces", 0x0a, InterfaceSchema],
  ["routes", 0x12, RouteSchema],
  ["rules", 0x1a, RuleSchema],
  ["neighbors", 0x22, NeighborSchema],
  ["sysctls", 0x2a, SysctlSchema],
  ["nexthops", 0x32, NexthopSchema],
];

/** The pieces of a State, in field order; undefined when it is off the shape. */
function statePieces(state: Record<string, unknown>): Piece[] | undefined {
  if (state.$typeName !== StateSchema.typeName || "$unknown" in state) return undefined;
  const pieces: Piece[] = [];
  for (const [name, tag, schema] of STATE_LISTS) {
    const list = state[name];
    if (!Array.isArray(list)) return undefined;
    for (const item of list) {
      const size =
        name === "routes"
          ? routeSize(item as Route)
          : name === "sysctls"
            ? sysctlSize(item as Sysctl)
            : -1;
      if (size >= 0)
        pieces.push(
          name === "routes"
            ? { tag, route: item as Route, size }
            : { tag, sysctl: item as Sysctl, size },
        );
      else {
        const bytes = toBinary(schema, item);
        pieces.push({ tag, bytes, size: bytes.length });
      }
    }
  }
  return pieces;
}

const framed = (p: Piece) => varintSize(p.tag) + varintSize(p.size) + p.size;

/** A State's pieces and their framed size (its bytes, without a tag of its own). */
interface SizedState {
  pieces: Piece[];
  size: number;
}

function sizedState(state: unknown): SizedState | undefined {
  const pieces = statePieces(state as Record<string, unknown>);
  if (pieces === undefined) return undefined;
  let size = 0;
  for (const p of pieces) size += framed(p);
  return { pieces, size };
}

/** The bytes of field 1 (`desired`, `result`) holding the State; none when it is absent. */
const stateFieldSize = (s: SizedState | undefined) =>
  s === undefined ? 0 : 1 + varintSize(s.size) + s.size;

function putStateField(w: ProtoWriter, s: SizedState | undefined): void {
  if (s === undefined) return;
  w.varint(0x0a);
  w.varint(s.size);
  putPieces(w, s.pieces);
}

function putPieces(w: ProtoWriter, pieces: readonly Piece[]): void {
  for (const p of pieces) {
    if (p.bytes) w.bytesField(p.tag, p.bytes);
    else {
      w.varint(p.tag);
      w.varint(p.size);
      if (p.route) putRoute(w, p.route);
      else putSysctl(w, p.sysctl as Sysctl);
    }
  }
}

type Encoder = (message: { $typeName: string }) => Uint8Array | undefined;

/** An encoder that declines (undefined) where toBinary of an element throws: its refusal of the whole stands. */
function declining(encode: (m: Record<string, unknown>) => Uint8Array | undefined): Encoder {
  return (message) => {
    try {
      return encode(message as Record<string, unknown>);
    } catch {
      return undefined;
    }
  };
}

/** ApplyResponse.plan's bytes (field 2, each line); undefined when a line is not ASCII. */
function planBytes(plan: readonly unknown[]): Uint8Array | undefined {
  let total = 0;
  for (const line of plan) {
    if (!isAscii(line)) return undefined;
    total += 1 + varintSize(line.length) + line.length;
  }
  const w = new ProtoWriter(total);
  for (const line of plan as readonly string[]) {
    // An empty line is still an element of the list: written, not left out.
    w.varint(0x12);
    w.varint(line.length);
    w.ascii(line);
  }
  return w.out;
}

/** Plan lines written ahead ({@link writePlanAhead}), by the list they were written from. */
const plansAhead = new WeakMap<readonly string[], Uint8Array>();

/**
 * Writes an answer's plan lines ahead of its answer, for
 * encodeApplyResponse to take by the list's identity: Apply does it while
 * ip runs the batch, so that a large plan's lines are not written after
 * the read back, on the answer's way out. `lines` must not change
 * afterwards.
 */
export function writePlanAhead(lines: readonly string[]): void {
  const bytes = planBytes(lines);
  if (bytes !== undefined) plansAhead.set(lines, bytes);
}

/** ApplyResponse as toBinary writes it; undefined when it is off the common shape. */
export const encodeApplyResponse: Encoder = declining((m) => {
  if (m.$typeName !== ApplyResponseSchema.typeName || "$unknown" in m) return undefined;
  const { result, plan, leftOut } = m;
  if (!Array.isArray(plan) || !Array.isArray(leftOut)) return undefined;
  const state = result === undefined ? undefined : sizedState(result);
  if (result !== undefined && state === undefined) return undefined;
  const lines = plansAhead.get(plan) ?? planBytes(plan);
  if (lines === undefined) return undefined;
  let total = stateFieldSize(state) + lines.length;
  const lefts = leftOut.map((l) => toBinary(LeftOutSchema, l));
  for (const b of lefts) total += 1 + varintSize(b.length) + b.length;
  const w = new ProtoWriter(total);
  putStateField(w, state);
  w.out.set(lines, w.at);
  w.at += lines.length;
  for (const b of lefts) w.bytesField(0x1a, b);
  return w.out;
});

/** A State (Get's answer) as toBinary writes it; undefined as encodeApplyResponse. */
export const encodeState: Encoder = declining((m) => {
  const state = sizedState(m);
  if (state === undefined) return undefined;
  const w = new ProtoWriter(state.size);
  putPieces(w, state.pieces);
  return w.out;
});

/**
 * ApplyRequest (the host's Apply) as toBinary writes it: the desired State
 * as above, then the three bools; undefined as encodeApplyResponse.
 */
export const encodeApplyRequest: Encoder = declining((m) => {
  if (m.$typeName !== ApplyRequestSchema.typeName || "$unknown" in m) return undefined;
  const { desired, dryRun, exact, bestEffort } = m;
  if (typeof dryRun !== "boolean" || typeof exact !== "boolean") return undefined;
  if (typeof bestEffort !== "boolean") return undefined;
  const state = desired === undefined ? undefined : sizedState(desired);
  if (desired !== undefined && state === undefined) return undefined;
  const w = new ProtoWriter(
    stateFieldSize(state) + boolSize(dryRun) + boolSize(exact) + boolSize(bestEffort),
  );
  putStateField(w, state);
  w.bool(0x10, dryRun);
  w.bool(0x18, exact);
  w.bool(0x20, bestEffort);
  return w.out;
});
