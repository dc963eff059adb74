/**
 * The RPC edge's table: each kind of network-layer error reaches the peer
 * with its row's status code and its message unchanged, through the same
 * registry options the agent serves with (a handler's throw, answered on
 * the wire and decoded by an independent protobuf implementation).
 */
import { describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { KIND_CODES, toTtrpcError, withStatus } from "../../src/common/error-status";
import { Health } from "../../src/gen/health_pb";
import { abortedError, NetError } from "../../src/net/model/net-error";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { encodeFrame, FrameDecoder, FrameType } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";

const ROWS: [NetError["kind"], Code][] = [
  ["invalid", Code.INVALID_ARGUMENT],
  ["not-found", Code.NOT_FOUND],
  ["exists", Code.ALREADY_EXISTS],
  ["denied", Code.PERMISSION_DENIED],
  ["precondition", Code.FAILED_PRECONDITION],
  ["unavailable", Code.UNAVAILABLE],
  ["exhausted", Code.RESOURCE_EXHAUSTED],
  ["internal", Code.INTERNAL],
];

/** The status a peer decodes when the Version handler throws `err`. */
async function answerFor(err: unknown): Promise<{ code: number; message: string }> {
  const answers: { code: number; message: string }[] = [];
  const decoder = new FrameDecoder();
  const conn = new ServerConnection({
    registry: new ServiceRegistry(AGENT_REGISTRY_OPTIONS).register(Health, {
      version: async () => {
        throw err;
      },
    }),
    write: (bytes) => {
      for (const f of decoder.push(bytes)) {
        if (f.kind !== "frame") continue;
        const r = pbDecodeResponse(f.data);
        answers.push({ code: r.status?.code ?? 0, message: r.status?.message ?? "" });
      }
    },
  });
  conn.receive(
    encodeFrame(
      1,
      FrameType.Request,
      0,
      pbEncodeRequest({ service: "grpc.Health", method: "Version" }),
    ),
  );
  await conn.drain();
  expect(answers).toHaveLength(1);
  return answers[0] as { code: number; message: string };
}

describe("network-layer errors at the RPC edge", () => {
  it("has a row for every kind but aborted, and no other", () => {
    expect(Object.keys(KIND_CODES).sort()).toEqual(ROWS.map(([k]) => k).sort());
  });

  for (const [kind, code] of ROWS) {
    it(`${kind} is answered ${Code[code]}, message unchanged`, async () => {
      const answer = await answerFor(new NetError(kind, `Link not found (${kind})`));
      expect(answer).toEqual({ code, message: `Link not found (${kind})` });
    });
  }

  it("aborted takes its reason's code: the call's deadline", async () => {
    const ac = new AbortController();
    ac.abort(new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED));
    const answer = await answerFor(abortedError(ac.signal, "ip route show"));
    expect(answer).toEqual({
      code: Code.DEADLINE_EXCEEDED,
      message: "ip route show: call cancelled (deadline exceeded)",
    });
  });

  it("aborted takes its reason's code: the caller gone", async () => {
    const ac = new AbortController();
    ac.abort(new TtrpcError("connection closed", Code.CANCELLED));
    expect((await answerFor(abortedError(ac.signal, "ip -batch"))).code).toBe(Code.CANCELLED);
  });

  it("aborted with a reason that carries no code (a plain Error, a string): CANCELLED", async () => {
    for (const reason of [new Error("peer gone"), "gone"]) {
      const ac = new AbortController();
      ac.abort(reason);
      expect((await answerFor(abortedError(ac.signal, "iptables-save"))).code).toBe(Code.CANCELLED);
    }
    const timeout = new AbortController();
    timeout.abort(new DOMException("timed out", "TimeoutError"));
    const answer = await answerFor(abortedError(timeout.signal, "iptables-save"));
    expect(answer.code).toBe(Code.DEADLINE_EXCEEDED);
  });

  it("withStatus: a NetError as the peer would see it (netagentctl's own reads), others as they are", () => {
    const seen = withStatus(new NetError("not-found", "ip -n pod link show: x"));
    expect(seen).toBeInstanceOf(TtrpcError);
    expect([(seen as TtrpcError).code, (seen as TtrpcError).message]).toEqual([
      Code.NOT_FOUND,
      "ip -n pod link show: x",
    ]);
    const plain = new Error("boom");
    expect(withStatus(plain)).toBe(plain);
    const t = new TtrpcError("x", Code.UNIMPLEMENTED);
    expect(withStatus(t)).toBe(t);
  });

  it("a TtrpcError and a plain Error keep today's conversion", () => {
    const t = new TtrpcError("x", Code.OUT_OF_RANGE);
    expect(toTtrpcError(t)).toBe(t);
    expect(toTtrpcError(new Error("boom")).code).toBe(Code.UNKNOWN);
  });

  it("without the agent's options a NetError is UNKNOWN (the table is what maps it)", async () => {
    const registry = new ServiceRegistry();
    expect(registry.toError(new NetError("not-found", "x")).code).toBe(Code.UNKNOWN);
  });
});
