/**
 * ServerConnection, pure (test/helpers/server-harness.ts): calls that
 * succeed, and the connection's lifecycle and robustness. The error
 * table: server-connection-errors.test.ts; deadlines:
 * server-connection-deadlines.test.ts.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CheckRequestSchema,
  Health,
  HealthCheckResponse_ServingStatus,
} from "../../src/gen/health_pb";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";
import { encodeOkResponse } from "../../src/ttrpc/status";
import { pbDecodeResponse } from "../helpers/envelope-pbjs";
import { type Answer, deferred, harness, SERVING } from "../helpers/server-harness";
import { waitFor } from "../helpers/wait";

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
