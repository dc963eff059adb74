/**
 * AgentClient (src/client/client.ts) over a real unix socket whose server
 * hangs up: every pending call fails UNAVAILABLE at once, later calls too.
 */
import { createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { Health } from "../../src/gen/health_pb";
import { Code } from "../../src/ttrpc/codes";
import { FrameDecoder } from "../../src/ttrpc/frame";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

/** A server that reads requests and never answers; resolves with its socket. */
async function silentServer() {
  dir = tempDir();
  const path = dir.join("silent.sock");
  const requests: number[] = [];
  let peer: Socket | undefined;
  const server = createServer((socket) => {
    peer = socket;
    const decoder = new FrameDecoder();
    socket.on("data", (c: Buffer) => {
      for (const f of decoder.push(c)) requests.push(f.streamId);
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    path,
    requests,
    hangUp: () => peer?.destroy(),
    close: () => new Promise((r) => server.close(r)),
  };
}

describe("AgentClient when the connection drops", () => {
  it("fails every pending call with UNAVAILABLE, and every later one", async () => {
    const s = await silentServer();
    const client = await AgentClient.connect(`unix://${s.path}`);
    const calls = Array.from({ length: 8 }, () =>
      client.unary(Health.method.check, {}, { timeoutMs: 60_000 }),
    );
    await waitFor(() => s.requests.length === 8, { what: "8 requests at the server" });
    expect(s.requests).toEqual([1, 3, 5, 7, 9, 11, 13, 15]);
    s.hangUp();
    const results = await Promise.allSettled(calls);
    expect(results.map((r) => r.status === "rejected" && r.reason.code)).toEqual(
      Array(8).fill(Code.UNAVAILABLE),
    );
    expect(client.closed).toBe(true);
    await expect(client.unary(Health.method.check, {})).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
    });
    client.close();
    await s.close();
  });

  it("fails a pending call at its own deadline while the server stays silent", async () => {
    const s = await silentServer();
    const client = await AgentClient.connect(`unix://${s.path}`);
    await expect(client.unary(Health.method.check, {}, { timeoutMs: 50 })).rejects.toMatchObject({
      code: Code.DEADLINE_EXCEEDED,
    });
    // The connection itself is fine.
    expect(client.closed).toBe(false);
    client.close();
    await s.close();
  });
});
