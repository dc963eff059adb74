/**
 * What the frame fuzzing (frame-fuzz.test.ts) feeds and checks: a
 * ServerConnection over grpc.Health whose every write must be one whole,
 * valid Response frame, with the staging bound checked after each input;
 * frames as the fuzzer describes them (any header values, announced
 * lengths that differ from the body) and their arbitraries; the answers
 * Go's rules call for; and the tally of inputs fed.
 */
import fc from "fast-check";
import { expect } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { healthService } from "../../src/agent/services/health-service";
import { Health } from "../../src/gen/health_pb";
import { Code } from "../../src/ttrpc/codes";
import {
  encodeFrame,
  FrameDecoder,
  FrameType,
  HEADER_LENGTH,
  MAX_DATA_LENGTH,
} from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";

const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS).register(Health, healthService);
/** Inputs fed in this file, for the report at the end. */
export const tally = { inProcess: 0, agent: 0 };

interface Out {
  streamId: number;
  type: number;
  flags: number;
  code: number;
  message: string;
}

/** A ServerConnection whose every write must be one whole, valid Response frame. */
export function harness() {
  const out: Out[] = [];
  const problems: string[] = [];
  const conn = new ServerConnection({
    registry,
    write: (bytes) => {
      const d = new FrameDecoder();
      const frames = d.push(bytes);
      const f = frames[0];
      if (frames.length !== 1 || d.pending || f?.kind !== "frame") {
        problems.push(`write of ${bytes.length} bytes is not exactly one frame`);
        return;
      }
      if (f.type !== FrameType.Response || f.flags !== 0) problems.push(`bad answer type/flags`);
      const res = pbDecodeResponse(f.data);
      out.push({
        streamId: f.streamId,
        type: f.type,
        flags: f.flags,
        code: res.status?.code ?? 0,
        message: res.status?.message ?? "",
      });
    },
  });
  /** Largest body the decoder has staged: it must never exceed the limit. */
  const staged = () =>
    ((conn as unknown as { decoder: { body?: Uint8Array } }).decoder.body?.length ?? 0) as number;
  return { conn, out, problems, staged };
}

/** Feeds `chunks`, checking the staging bound after each, and waits for every call. */
export async function feed(
  h: ReturnType<typeof harness>,
  chunks: Iterable<Uint8Array>,
): Promise<void> {
  for (const c of chunks) {
    h.conn.receive(c);
    tally.inProcess++;
    expect(h.staged()).toBeLessThanOrEqual(MAX_DATA_LENGTH);
  }
  await h.conn.drain();
}

export const checkRequest = (timeoutNano = 0) =>
  pbEncodeRequest({ service: "grpc.Health", method: "Check", timeoutNano });

// ---- generators ----------------------------------------------------------

/** One frame as the fuzzer describes it; `announced` may differ from the body. */
interface FrameSpec {
  streamId: number;
  type: number;
  flags: number;
  body: Uint8Array;
}

const streamIdArb = fc.oneof(
  fc.integer({ min: 0, max: 20 }),
  fc.constantFrom(0, 1, 2, 0x7fff_ffff, 0xffff_fffe, 0xffff_ffff),
  fc.integer({ min: 0, max: 0xffff_ffff }),
);
const typeArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(1, 2, 3) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 255 }) },
);
const flagsArb = fc.integer({ min: 0, max: 255 });
const bodyArb = fc
  .oneof(
    { weight: 3, arbitrary: fc.constant(checkRequest()) },
    {
      weight: 1,
      arbitrary: fc.record({
        service: fc.constantFrom("grpc.Health", "grpc.AgentService", "x", ""),
        method: fc.constantFrom("Check", "Version", "List", "", "check"),
        timeoutNano: fc.constantFrom(0, 1, 1e9, -1),
        payload: fc.uint8Array({ maxLength: 40 }),
      }),
    },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 60 }) },
  )
  .map((b) => (b instanceof Uint8Array ? b : pbEncodeRequest(b)));

export const frameArb: fc.Arbitrary<FrameSpec> = fc.record({
  streamId: streamIdArb,
  type: typeArb,
  flags: flagsArb,
  body: bodyArb,
});

/** Codes a Request frame may be answered with; never INTERNAL or UNKNOWN. */
export const ALLOWED = new Set([
  Code.OK,
  Code.INVALID_ARGUMENT,
  Code.UNIMPLEMENTED,
  Code.DEADLINE_EXCEEDED,
  Code.RESOURCE_EXHAUSTED,
]);

/** What a server must answer for whole frames `frames`, by Go's rules. */
export function expectedAnswers(
  frames: readonly FrameSpec[],
): { streamId: number; codes: Set<Code> }[] {
  let last = 0;
  const want: { streamId: number; codes: Set<Code> }[] = [];
  for (const f of frames) {
    if (f.type !== FrameType.Request) continue;
    if (f.streamId % 2 === 0 || f.streamId <= last) {
      want.push({ streamId: f.streamId, codes: new Set([Code.INVALID_ARGUMENT]) });
      continue;
    }
    last = f.streamId;
    want.push({ streamId: f.streamId, codes: ALLOWED });
  }
  return want;
}

export function encode(f: FrameSpec): Uint8Array {
  return encodeFrame(f.streamId, f.type as FrameType, f.flags, f.body);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A header announcing `length` bytes, followed by only `tail` of them. */
export function announce(length: number, streamId: number, type: number, flags: number, tail = 0) {
  const h = new Uint8Array(HEADER_LENGTH + tail);
  const v = new DataView(h.buffer);
  v.setUint32(0, length);
  v.setUint32(4, streamId);
  h[8] = type;
  h[9] = flags;
  return h;
}

// ---- in process ----------------------------------------------------------
