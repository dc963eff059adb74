/**
 * ServerConnection, pure: bytes in through receive(), frames out through the
 * write callback. Requests are encoded and responses decoded with protobufjs
 * (test/helpers/envelope-pbjs.ts), independently of our generated code.
 * One test per row of the error table in issue #2.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CheckRequestSchema,
  Health,
  HealthCheckResponse_ServingStatus,
} from "../../src/gen/health_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import {
  type DecodedFrame,
  encodeFrame,
  FrameDecoder,
  FrameType,
  HEADER_LENGTH,
  MAX_DATA_LENGTH,
} from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { type CallContext, type ServiceImpl, ServiceRegistry } from "../../src/ttrpc/service";
import { encodeOkResponse } from "../../src/ttrpc/status";
import { type PbRequest, pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";
import { waitFor } from "../helpers/wait";

const SERVING = { status: HealthCheckResponse_ServingStatus.SERVING };

interface Answer {
  streamId: number;
  type: number;
  flags: number;
  code: number | undefined;
  message: string | undefined;
  payload: Uint8Array;
  raw: Uint8Array;
}

/** A connection over the Health service with `impl`, recording what it writes. */
function harness(impl: ServiceImpl<typeof Health> = { check: () => SERVING }) {
  const decoder = new FrameDecoder();
  const answers: Answer[] = [];
  const writes: Uint8Array[] = [];
  const conn = new ServerConnection({
    registry: new ServiceRegistry().register(Health, impl),
    write: (bytes) => {
      writes.push(bytes);
      // Each write must be exactly one whole frame.
      const frames = decoder.push(bytes);
      expect(frames).toHaveLength(1);
      expect(decoder.pending).toBe(false);
      const f = frames[0] as DecodedFrame & { kind: "frame" };
      const res = pbDecodeResponse(f.data);
      answers.push({
        streamId: f.streamId,
        type: f.type,
        flags: f.flags,
        code: res.status?.code,
        message: res.status?.message,
        payload: res.payload,
        raw: f.data,
      });
    },
  });
  const request = (streamId: number, req: Partial<PbRequest> = {}) =>
    encodeFrame(
      streamId,
      FrameType.Request,
      0,
      pbEncodeRequest({ service: "grpc.Health", method: "Check", ...req }),
    );
  return {
    conn,
    answers,
    writes,
    request,
    send(streamId: number, req: Partial<PbRequest> = {}) {
      conn.receive(request(streamId, req));
    },
    /** Waits until `n` answers have been written. */
    until: (n: number) =>
      waitFor(() => answers.length >= n, { intervalMs: 1, what: `${n} answers` }),
    byStream: (id: number) => answers.find((a) => a.streamId === id),
  };
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("ServerConnection: success", () => {
  it("answers Check with an empty status (0a 00) and the payload, on the same stream", async () => {
    const h = harness();
    h.send(1);
    await h.conn.drain();
    expect(h.answers).toHaveLength(1);
    const a = h.answers[0] as Answer;
    expect([a.streamId, a.type, a.flags]).toEqual([1, FrameType.Response, 0]);
    expect([...a.raw]).toEqual([0x0a, 0x00, 0x12, 0x02, 0x08, 0x01]);
    expect(a.code).toBe(0);
    expect(a.message).toBe("");
    expect([...a.payload]).toEqual([0x08, 0x01]);
  });

  it("encodeOkResponse matches protobufjs: status present and empty, payload as given", () => {
    const bytes = encodeOkResponse(Uint8Array.of(1, 2, 3));
    expect([...bytes.subarray(0, 2)]).toEqual([0x0a, 0x00]);
    expect(pbDecodeResponse(bytes)).toEqual({
      status: { code: 0, message: "" },
      payload: Uint8Array.of(1, 2, 3),
    });
    expect(pbDecodeResponse(encodeOkResponse(new Uint8Array())).status).toEqual({
      code: 0,
      message: "",
    });
  });

  it("decodes the request payload and hands the handler its message and metadata", async () => {
    let seen: { service: string; metadata: ReadonlyMap<string, readonly string[]> } | undefined;
    const h = harness({
      check: (req, ctx) => {
        seen = { service: req.service, metadata: ctx.metadata };
        return SERVING;
      },
    });
    h.send(1, {
      payload: toBinary(CheckRequestSchema, { $typeName: "grpc.CheckRequest", service: "x" }),
      metadata: [
        { key: "k", value: "a" },
        { key: "k", value: "b" },
        { key: "other", value: "c" },
      ],
    });
    await h.conn.drain();
    expect(seen?.service).toBe("x");
    expect([...(seen?.metadata ?? [])]).toEqual([
      ["k", ["a", "b"]],
      ["other", ["c"]],
    ]);
    expect(h.answers[0]?.code).toBe(0);
  });

  it("runs calls concurrently and answers in completion order", async () => {
    const gates = new Map<string, ReturnType<typeof deferred<void>>>();
    const h = harness({
      check: async (req) => {
        const gate = deferred<void>();
        gates.set(req.service, gate);
        await gate.promise;
        return SERVING;
      },
      version: () => ({ agentVersion: "v", grpcVersion: "g" }),
    });
    const payload = (name: string) =>
      toBinary(CheckRequestSchema, { $typeName: "grpc.CheckRequest", service: name });
    h.send(1, { payload: payload("a") });
    h.send(3, { payload: payload("b") });
    h.send(5, { payload: payload("c") });
    h.send(7, { method: "Version" });
    await waitFor(() => gates.size === 3, { intervalMs: 1 });
    await h.until(1);
    expect(h.conn.activeCalls).toBe(3);
    gates.get("c")?.resolve();
    await h.until(2);
    gates.get("a")?.resolve();
    await h.until(3);
    gates.get("b")?.resolve();
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [7, 0],
      [5, 0],
      [1, 0],
      [3, 0],
    ]);
    expect(h.conn.activeCalls).toBe(0);
  });

  it("takes requests split at every byte boundary", async () => {
    const h = harness();
    const bytes = h.request(1);
    for (let i = 0; i < bytes.length; i++) h.conn.receive(bytes.subarray(i, i + 1));
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([[1, 0]]);
  });
});

describe("ServerConnection: the error table", () => {
  it("unknown service -> UNIMPLEMENTED 'service X'", async () => {
    const h = harness();
    h.send(1, { service: "grpc.Nope" });
    await h.conn.drain();
    expect(h.answers[0]).toMatchObject({
      streamId: 1,
      code: Code.UNIMPLEMENTED,
      message: "service grpc.Nope",
    });
  });

  it("unknown method -> UNIMPLEMENTED 'method X', also for a method the impl leaves out", async () => {
    const h = harness({ check: () => SERVING });
    h.send(1, { method: "Nope" });
    h.send(3, { method: "Version" });
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [1, Code.UNIMPLEMENTED, "method Nope"],
      [3, Code.UNIMPLEMENTED, "method Version"],
    ]);
  });

  it("undecodable Request -> INVALID_ARGUMENT on that stream; later calls work", async () => {
    const h = harness();
    // Field 1 (service) claims 100 bytes, 1 follows: truncated.
    h.conn.receive(encodeFrame(1, FrameType.Request, 0, Uint8Array.of(0x0a, 100, 0x41)));
    // Wire type 7 does not exist.
    h.conn.receive(encodeFrame(3, FrameType.Request, 0, Uint8Array.of(0x0f, 0x00)));
    h.send(5);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.INVALID_ARGUMENT],
      [3, Code.INVALID_ARGUMENT],
      [5, Code.OK],
    ]);
    expect(h.answers[0]?.message).toMatch(/^unmarshal request error: /);
  });

  it("undecodable payload -> INVALID_ARGUMENT naming the message type", async () => {
    const h = harness();
    h.send(1, { payload: Uint8Array.of(0x0a, 50) });
    await h.conn.drain();
    expect(h.answers[0]?.code).toBe(Code.INVALID_ARGUMENT);
    expect(h.answers[0]?.message).toContain("grpc.CheckRequest");
  });

  it("oversize frame -> RESOURCE_EXHAUSTED on that stream, body discarded, connection kept", async () => {
    const h = harness();
    const header = new Uint8Array(HEADER_LENGTH);
    const view = new DataView(header.buffer);
    view.setUint32(0, MAX_DATA_LENGTH + 1);
    view.setUint32(4, 1);
    header[8] = FrameType.Request;
    h.conn.receive(header);
    // The status goes out as soon as the header is read; the body is skipped.
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [
        1,
        Code.RESOURCE_EXHAUSTED,
        `message length ${MAX_DATA_LENGTH + 1} exceed maximum message size of ${MAX_DATA_LENGTH}`,
      ],
    ]);
    // The body (which looks like frames, to prove it is not parsed) in pieces.
    const junk = new Uint8Array(MAX_DATA_LENGTH + 1);
    const fake = h.request(99);
    for (let off = 0; off + fake.length < junk.length; off += 65_536) junk.set(fake, off);
    for (let off = 0; off < junk.length; off += 1_000_003) {
      h.conn.receive(junk.subarray(off, off + 1_000_003));
    }
    expect(h.conn.partialFrame).toBe(false);
    h.send(3);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.RESOURCE_EXHAUSTED],
      [3, Code.OK],
    ]);
  });

  it("an answer over 4 MiB -> RESOURCE_EXHAUSTED instead, and the connection goes on", async () => {
    const h = harness({
      check: () => SERVING,
      version: () => ({ agentVersion: "x".repeat(MAX_DATA_LENGTH), grpcVersion: "0.0.1" }),
    });
    h.send(1, { method: "Version" });
    h.send(3);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual(
      expect.arrayContaining([
        [1, Code.RESOURCE_EXHAUSTED],
        [3, Code.OK],
      ]),
    );
    expect(h.byStream(1)?.message).toMatch(/exceed maximum message size of 4194304/);
    expect(h.writes.every((w) => w.length <= HEADER_LENGTH + MAX_DATA_LENGTH)).toBe(true);
  });

  it("a frame of exactly 4 MiB is read and served", async () => {
    const h = harness();
    // Envelope overhead for grpc.Health/Check with a payload of length P
    // (4-byte varint): 13 + 7 + 1 + 4 = 25 bytes; the payload is one
    // unknown bytes field 15 (7a, 4-byte length), which decoders skip.
    const payload = new Uint8Array(MAX_DATA_LENGTH - 25);
    payload[0] = 0x7a;
    const len = payload.length - 5;
    payload.set(
      [(len & 0x7f) | 0x80, ((len >> 7) & 0x7f) | 0x80, ((len >> 14) & 0x7f) | 0x80, len >> 21],
      1,
    );
    const frame = h.request(1, { payload });
    expect(frame.length).toBe(HEADER_LENGTH + MAX_DATA_LENGTH);
    h.conn.receive(frame);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([[1, Code.OK]]);
  });

  it("even stream id -> INVALID_ARGUMENT on that stream; the connection goes on", async () => {
    const h = harness();
    h.send(2);
    h.send(0);
    h.send(1);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [2, Code.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams"],
      [0, Code.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams"],
      [1, Code.OK, ""],
    ]);
  });

  it("a stream id not above the last -> INVALID_ARGUMENT; later increasing ids work", async () => {
    const h = harness();
    h.send(5);
    await h.conn.drain();
    h.send(5);
    h.send(3);
    h.send(7);
    h.send(7);
    h.send(0xffff_ffff);
    await h.conn.drain();
    const reuse = "StreamID cannot be re-used and must increment";
    // Rejections are written at once, answers when the call completes: compare as sets.
    const rows = h.answers.map((a) => [a.streamId, a.code, a.message]);
    expect(rows).toHaveLength(6);
    expect(rows).toEqual(
      expect.arrayContaining([
        [5, Code.OK, ""],
        [5, Code.INVALID_ARGUMENT, reuse],
        [3, Code.INVALID_ARGUMENT, reuse],
        [7, Code.OK, ""],
        [7, Code.INVALID_ARGUMENT, reuse],
        [0xffff_ffff, Code.OK, ""],
      ]),
    );
  });

  it("Data frames on unary streams, stray Responses and unknown frame types are ignored", async () => {
    const gate = deferred<void>();
    const h = harness({
      check: async () => {
        await gate.promise;
        return SERVING;
      },
    });
    h.send(1);
    // Data on the in-flight unary stream, with and without close flags.
    h.conn.receive(encodeFrame(1, FrameType.Data, 0, Uint8Array.of(1, 2)));
    h.conn.receive(encodeFrame(1, FrameType.Data, 0x5, new Uint8Array()));
    h.conn.receive(encodeFrame(1, FrameType.Data, 0x1, Uint8Array.of(3)));
    // Data on unknown streams, a stray Response, unknown types 0, 4 and 0xff.
    h.conn.receive(encodeFrame(9, FrameType.Data, 0, Uint8Array.of(1)));
    h.conn.receive(encodeFrame(11, FrameType.Response, 0, Uint8Array.of(0x0a, 0x00)));
    for (const type of [0, 4, 0xff]) {
      h.conn.receive(encodeFrame(13, type as FrameType, 0xff, Uint8Array.of(0xff, 0xff)));
    }
    expect(h.answers).toHaveLength(0);
    gate.resolve();
    await h.conn.drain();
    h.send(3);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.OK],
      [3, Code.OK],
    ]);
  });

  it("timeout_nano -> the handler's signal aborts and DEADLINE_EXCEEDED is answered", async () => {
    let ctxSeen: CallContext | undefined;
    let abortedInHandler = false;
    const h = harness({
      check: (_req, ctx) => {
        ctxSeen = ctx;
        return new Promise((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            abortedInHandler = ctx.signal.aborted;
            reject(ctx.signal.reason);
          });
        });
      },
    });
    const before = performance.now();
    h.send(1, { timeoutNano: 30_000_000n });
    await h.conn.drain();
    expect(abortedInHandler).toBe(true);
    expect(ctxSeen?.signal.aborted).toBe(true);
    expect(ctxSeen?.deadline).toBeGreaterThanOrEqual(before + 30);
    expect(ctxSeen?.deadline).toBeLessThan(before + 30 + 1_000);
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([[1, Code.DEADLINE_EXCEEDED]]);
  });

  it("timeout_nano -> DEADLINE_EXCEEDED even when the handler ignores its signal", async () => {
    const never = deferred<typeof SERVING>();
    let signal: AbortSignal | undefined;
    const h = harness({
      check: (_req, ctx) => {
        signal = ctx.signal;
        return never.promise;
      },
    });
    h.send(1, { timeoutNano: 10_000_000 });
    await h.until(1);
    expect(signal?.aborted).toBe(true);
    expect(h.answers[0]?.code).toBe(Code.DEADLINE_EXCEEDED);
    // A late result is not sent a second time.
    never.resolve(SERVING);
    await h.conn.drain();
    expect(h.answers).toHaveLength(1);
  });

  it("without timeout_nano the handler has no deadline and an unaborted signal", async () => {
    let ctxSeen: CallContext | undefined;
    const h = harness({
      check: (_req, ctx) => {
        ctxSeen = ctx;
        return SERVING;
      },
    });
    h.send(1);
    await h.conn.drain();
    expect(ctxSeen?.deadline).toBeUndefined();
    expect(ctxSeen?.signal.aborted).toBe(false);
  });

  it("a deadline longer than a JS timer can hold (> 2^31-1 ms) does not fire at once", async () => {
    let ctxSeen: CallContext | undefined;
    const h = harness({
      check: async (_req, ctx) => {
        ctxSeen = ctx;
        // Give an overflowed timer (clamped to 1 ms) the chance to fire.
        // not a wait: a stretch in which an overflowed (clamped) timer would have fired
        await new Promise((r) => setTimeout(r, 20));
        return SERVING;
      },
    });
    h.send(1, { timeoutNano: 30n * 24n * 3600n * 1_000_000_000n }); // 30 days
    h.send(3, { timeoutNano: 0x7fff_ffff_ffff_ffffn }); // int64 max
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.OK],
      [3, Code.OK],
    ]);
    expect(ctxSeen?.signal.aborted).toBe(false);
  });

  it.each([
    [
      "a TtrpcError keeps its code",
      new TtrpcError("Link not found", Code.NOT_FOUND),
      5,
      "Link not found",
    ],
    ["a plain Error is UNKNOWN with its message", new Error("boom"), Code.UNKNOWN, "boom"],
    ["a thrown string is UNKNOWN", "just text", Code.UNKNOWN, "just text"],
    [
      "a TimeoutError is DEADLINE_EXCEEDED",
      new DOMException("took too long", "TimeoutError"),
      Code.DEADLINE_EXCEEDED,
      "took too long",
    ],
    ["an AbortError is CANCELLED", new DOMException("gone", "AbortError"), Code.CANCELLED, "gone"],
  ])("handler error -> status: %s", async (_name, thrown, code, message) => {
    const h = harness({
      check: () => {
        throw thrown;
      },
      version: async () => {
        throw thrown;
      },
    });
    h.send(1);
    h.send(3, { method: "Version" });
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [1, code, message],
      [3, code, message],
    ]);
    // A failed call carries no payload.
    expect(h.answers.every((a) => a.payload.length === 0)).toBe(true);
  });

  it("a handler returning nothing -> INTERNAL, not a crash", async () => {
    const h = harness({ check: () => undefined as unknown as typeof SERVING });
    h.send(1);
    await h.conn.drain();
    expect(h.answers[0]?.code).toBe(Code.INTERNAL);
  });
});

describe("ServerConnection: lifecycle and robustness", () => {
  it("close() aborts calls in flight, drops their answers and ignores later bytes", async () => {
    let signal: AbortSignal | undefined;
    const h = harness({
      check: (_req, ctx) => {
        signal = ctx.signal;
        return new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
        );
      },
    });
    h.send(1);
    await waitFor(() => signal, { intervalMs: 1 });
    h.conn.close();
    expect(signal?.aborted).toBe(true);
    await h.conn.drain();
    h.send(3);
    await h.conn.drain();
    expect(h.answers).toHaveLength(0);
  });

  it("never throws, and only ever writes whole Response frames, for any input bytes", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 20 }), (chunks) => {
        const h = harness();
        for (const c of chunks) h.conn.receive(c);
        for (const a of h.answers) {
          expect(a.type).toBe(FrameType.Response);
          expect(a.flags).toBe(0);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("answers random well-framed but malformed requests with a status each", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 10 }),
        async (bodies) => {
          const h = harness();
          bodies.forEach((b, i) => {
            h.conn.receive(encodeFrame(2 * i + 1, FrameType.Request, 0, b));
          });
          await h.conn.drain();
          // Answers leave in completion order: one each, in whatever order.
          const ids = h.answers.map((a) => a.streamId).sort((a, b) => a - b);
          expect(ids).toEqual(bodies.map((_, i) => 2 * i + 1));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("the Check response decodes with our generated schema too", async () => {
    const h = harness();
    h.send(1, {
      payload: toBinary(CheckRequestSchema, { $typeName: "grpc.CheckRequest", service: "" }),
    });
    await h.conn.drain();
    const payload = h.answers[0]?.payload ?? new Uint8Array();
    expect(fromBinary(Health.method.check.output, payload).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );
  });
});
