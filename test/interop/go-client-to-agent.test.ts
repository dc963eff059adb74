/**
 * containerd's Go ttrpc client (Debian's golang-github-containerd-ttrpc-dev)
 * against the compiled dist/netagent over a unix socket.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { VersionCheckResponseSchema } from "../../src/gen/health_pb";
import { Code } from "../../src/ttrpc/codes";
import { MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";

function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

describe("Go ttrpc client -> dist/netagent", () => {
  let agent: RunningAgent;

  beforeAll(async () => {
    goPrograms();
    agent = await startAgent();
  });
  afterAll(async () => {
    await agent?.stop();
  });

  it("Check answers SERVING (08 01)", async () => {
    const [step] = await goClient(agent.socket, [{ method: "Check" }]);
    expect(step?.results).toEqual([{ code: 0, message: "", payload: "0801" }]);
  });

  it("Version reports the package version and API version 0.0.1", async () => {
    const [step] = await goClient(agent.socket, [{ method: "Version" }]);
    const result = step?.results?.[0];
    expect(result?.code).toBe(Code.OK);
    const version = fromBinary(VersionCheckResponseSchema, fromHex(result?.payload ?? ""));
    expect(version.agentVersion).toBe(pkg.version);
    expect(version.grpcVersion).toBe("0.0.1");
  });

  it("an unknown service is UNIMPLEMENTED 'service X', an unknown method 'method X'", async () => {
    const steps = await goClient(agent.socket, [
      { service: "grpc.NoSuchService", method: "Check" },
      { service: "grpc.Health", method: "NoSuchMethod" },
      { service: "grpc.AgentService", method: "NoSuchMethod" },
    ]);
    expect(steps.map((s) => s.results?.[0])).toEqual([
      { code: Code.UNIMPLEMENTED, message: "service grpc.NoSuchService", payload: "" },
      { code: Code.UNIMPLEMENTED, message: "method NoSuchMethod", payload: "" },
      { code: Code.UNIMPLEMENTED, message: "method NoSuchMethod", payload: "" },
    ]);
  });

  it("a 4 MiB + 1 payload is RESOURCE_EXHAUSTED and the same connection still answers", async () => {
    const steps = await goClient(agent.socket, [
      { method: "Check", payloadLen: MAX_DATA_LENGTH + 1 },
      { method: "Check" },
      { method: "Check", payloadLen: MAX_DATA_LENGTH + 1 },
      { method: "Version" },
    ]);
    const [over, check, over2, version] = steps.map((s) => s.results?.[0]);
    expect(over?.code).toBe(Code.RESOURCE_EXHAUSTED);
    expect(over?.message).toMatch(/exceed maximum message size of 4194304/);
    expect(check).toEqual({ code: 0, message: "", payload: "0801" });
    expect(over2?.code).toBe(Code.RESOURCE_EXHAUSTED);
    expect(version?.code).toBe(Code.OK);
  });

  it("a Request frame of exactly 4 MiB is served, one byte more is not", async () => {
    // Envelope: 0a 0b "grpc.Health" (13) + 12 05 "Check" (7) + 1a, a 4-byte
    // varint length, then the payload: 25 bytes besides the payload.
    const steps = await goClient(agent.socket, [
      { method: "Check", payloadLen: MAX_DATA_LENGTH - 25 },
      { method: "Check", payloadLen: MAX_DATA_LENGTH - 24 },
    ]);
    expect(steps.map((s) => s.results?.[0])).toEqual([
      { code: 0, message: "", payload: "0801" },
      {
        code: Code.RESOURCE_EXHAUSTED,
        message: "message length 4194305 exceed maximum message size of 4194304",
        payload: "",
      },
    ]);
  });

  it("64 concurrent calls on one connection are all answered", async () => {
    const [step] = await goClient(agent.socket, [{ method: "Check", n: 64, c: 64 }]);
    expect(step?.codes).toEqual({ "0": 64 });
    expect(step?.results?.every((r) => r.payload === "0801")).toBe(true);
  });

  it("a deadline sent as timeout_nano does not disturb a fast call", async () => {
    const [step] = await goClient(agent.socket, [{ method: "Check", timeoutMs: 5_000, n: 8 }]);
    expect(step?.codes).toEqual({ "0": 8 });
  });

  it("the agent is still up after all of the above", async () => {
    expect(agent.child.running).toBe(true);
    const [step] = await goClient(agent.socket, [{ method: "Check" }]);
    expect(step?.codes).toEqual({ "0": 1 });
  });
});
