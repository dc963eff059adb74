/**
 * No call can take the connection (or the process) down with it: a handler
 * that throws, rejects with an odd value, returns what cannot be encoded, or
 * an answer path (write, logging) that throws. Each gets a status on its own
 * stream and the next call is served; vitest fails the run on any unhandled
 * rejection, so "nothing escaped" is checked too.
 */
import { describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { Code } from "../../src/ttrpc/codes";
import { encodeFrame, FrameDecoder, FrameType, MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { type ServiceImpl, ServiceRegistry } from "../../src/ttrpc/service";
import { pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";
import { waitFor } from "../helpers/wait";

const SERVING = { status: HealthCheckResponse_ServingStatus.SERVING };

type Version = ServiceImpl<typeof Health>["version"];

function harness(
  version: Version,
  hooks: { write?: () => void; onCall?: () => void; check?: () => unknown } = {},
) {
  const answers: { id: number; code: number; message: string; size: number }[] = [];
  const decoder = new FrameDecoder();
  const conn = new ServerConnection({
    registry: new ServiceRegistry().register(Health, {
      // biome-ignore lint/suspicious/noExplicitAny: a test may answer a wrong shape.
      check: () => (hooks.check?.() ?? SERVING) as any,
      version,
    }),
    write: (bytes) => {
      hooks.write?.();
      for (const f of decoder.push(bytes)) {
        if (f.kind !== "frame") continue;
        const r = pbDecodeResponse(f.data);
        answers.push({
          id: f.streamId,
          code: r.status?.code ?? 0,
          message: r.status?.message ?? "",
          size: bytes.length,
        });
      }
    },
    onCall: () => hooks.onCall?.(),
  });
  const send = (id: number, method: string) =>
    conn.receive(
      encodeFrame(id, FrameType.Request, 0, pbEncodeRequest({ service: "grpc.Health", method })),
    );
  return { conn, answers, send };
}

const CASES: [string, Version, Code][] = [
  [
    "throws synchronously",
    () => {
      throw new Error("boom");
    },
    Code.UNKNOWN,
  ],
  ["rejects with a non-Error", () => Promise.reject(42), Code.UNKNOWN],
  [
    "rejects with a value whose text cannot be read",
    () =>
      Promise.reject({
        toString() {
          throw new Error("no text");
        },
      }),
    Code.INTERNAL,
  ],
  [
    "throws an error whose message is 10 MB",
    () => {
      throw new Error("\\".repeat(10_000_000));
    },
    Code.UNKNOWN,
  ],
];

describe("a failing call is answered on its stream and the connection serves on", () => {
  it.each(CASES)("a handler that %s", async (_, version, code) => {
    const h = harness(version);
    h.send(1, "Version");
    h.send(3, "Check");
    await h.conn.drain();
    const byId = new Map(h.answers.map((a) => [a.id, a]));
    expect(byId.get(1)?.code).toBe(code);
    expect(byId.get(1)?.size).toBeLessThanOrEqual(10 + MAX_DATA_LENGTH);
    expect(byId.get(1)?.message.length).toBeLessThan(20_000);
    expect(byId.get(3)?.code).toBe(Code.OK);
  });

  it("an answer that cannot be encoded (an int32 of 1.5): INTERNAL on that stream", async () => {
    const h = harness(() => ({ agentVersion: "v", grpcVersion: "0.0.1" }), {
      check: () => ({ status: 1.5 }),
    });
    h.send(1, "Check");
    h.send(3, "Version");
    await h.conn.drain();
    expect(h.answers.map((a) => [a.id, a.code])).toEqual([
      [1, Code.INTERNAL],
      [3, Code.OK],
    ]);
    expect(h.answers[0]?.message).toMatch(/^answer could not be encoded: .*invalid int32: 1.5/);
  });

  it("a write that throws, and logging that throws: the calls end, later ones are answered", async () => {
    let failWrites = 2;
    let failLogs = 3;
    const h = harness(() => ({ agentVersion: "v", grpcVersion: "0.0.1" }), {
      write: () => {
        if (failWrites-- > 0) throw new Error("EPIPE");
      },
      onCall: () => {
        if (failLogs-- > 0) throw new Error("log sink broken");
      },
    });
    h.send(1, "Check");
    h.send(3, "Version");
    await h.conn.drain();
    expect(h.conn.activeCalls).toBe(0);
    h.send(5, "Check");
    h.send(7, "Version");
    await h.conn.drain();
    expect(h.answers.map((a) => [a.id, a.code])).toEqual([
      [5, Code.OK],
      [7, Code.OK],
    ]);
  });

  it("a call past its deadline is answered at once but stays in flight until its work ends", async () => {
    let finish!: () => void;
    const work = new Promise<void>((r) => {
      finish = r;
    });
    let aborted = false;
    const conn = new ServerConnection({
      registry: new ServiceRegistry().register(Health, {
        check: async (_req, ctx) => {
          ctx.signal.addEventListener("abort", () => {
            aborted = true;
          });
          await work; // e.g. a rollback that must not be cut off
          return SERVING;
        },
      }),
      write: () => {},
    });
    conn.receive(
      encodeFrame(
        1,
        FrameType.Request,
        0,
        pbEncodeRequest({ service: "grpc.Health", method: "Check", timeoutNano: 20_000_000 }),
      ),
    );
    let drained = false;
    const drain = conn.drain().then(() => {
      drained = true;
    });
    await waitFor(() => aborted, { what: "the call's deadline to abort it" });
    expect(conn.activeCalls).toBe(1);
    expect(drained).toBe(false);
    finish();
    await drain;
    expect(conn.activeCalls).toBe(0);
  });
});
