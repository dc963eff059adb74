/**
 * What the agent does on SIGTERM (src/agent/main.ts calls
 * AgentServer.shutdown) with a call really in flight. The binary's only
 * methods (Health) answer synchronously, so no SIGTERM can land between a
 * request and its answer there; a slow handler, served in-process over a
 * real unix socket, makes the window wide and the test deterministic
 * without a test hook in the product.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentServer } from "../../src/agent/server/server";
import { AgentClient } from "../../src/client/client";
import { createLogger } from "../../src/common/log";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { listenUnix } from "../../src/transport/socket-listener";
import { Code } from "../../src/ttrpc/codes";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { canConnect } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const SERVING = { status: HealthCheckResponse_ServingStatus.SERVING };

let dir: TempDir | undefined;
const clients: AgentClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  dir?.remove();
});

/** An AgentServer on a unix socket whose Check waits for `release()`. */
async function slowServer() {
  dir = tempDir();
  const socket = dir.join("agent.sock");
  let entered = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const registry = new ServiceRegistry().register(Health, {
    check: async () => {
      entered++;
      await gate;
      return SERVING;
    },
    version: () => ({ agentVersion: "t", grpcVersion: "0.0.1" }),
  });
  const server = new AgentServer({ registry, log: createLogger("error"), maxConnections: 8 });
  server.addListener(await listenUnix(socket, server.accept));
  const connect = async () => {
    const c = await AgentClient.connect(`unix://${socket}`);
    clients.push(c);
    return c;
  };
  return { server, socket, connect, release, entered: () => entered };
}

describe("AgentServer.shutdown with calls in flight", () => {
  it("stops accepting, answers the calls in flight, then closes the connections", async () => {
    const s = await slowServer();
    const client = await s.connect();
    const idle = await s.connect();
    const calls = [client.unary(Health.method.check, {}), client.unary(Health.method.check, {})];
    await waitFor(() => s.entered() === 2, { what: "both calls in their handler" });

    const stopped = s.server.shutdown(5_000);
    // No new connections once shutdown has begun.
    await waitFor(async () => !(await canConnect(s.socket)), { what: "the listener to close" });
    expect(client.closed).toBe(false);

    s.release();
    expect(await stopped).toBe(true);
    expect((await Promise.all(calls)).map((r) => r.status)).toEqual([
      HealthCheckResponse_ServingStatus.SERVING,
      HealthCheckResponse_ServingStatus.SERVING,
    ]);
    await waitFor(() => client.closed && idle.closed, { what: "the connections to close" });
  });

  it("gives up after the grace period: the call fails UNAVAILABLE, nothing hangs", async () => {
    const s = await slowServer();
    const client = await s.connect();
    const call = client.unary(Health.method.check, {});
    await waitFor(() => s.entered() === 1);
    const t0 = performance.now();
    expect(await s.server.shutdown(100)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(2_000);
    await expect(call).rejects.toMatchObject({ code: Code.UNAVAILABLE });
    s.release();
  });

  it("a call answered DEADLINE_EXCEEDED still holds shutdown until its work has ended", async () => {
    const s = await slowServer();
    const client = await s.connect();
    await expect(client.unary(Health.method.check, {}, { timeoutMs: 50 })).rejects.toMatchObject({
      code: Code.DEADLINE_EXCEEDED,
    });
    let stopped = false;
    const stopping = s.server.shutdown(5_000).then((clean) => {
      stopped = true;
      return clean;
    });
    // not a wait: a stretch in which shutdown must not finish (its work is held); load only shortens it in effect, never fails a correct agent
    await new Promise((r) => setTimeout(r, 200));
    // The answer is out, the work is not done: shutdown waits for it.
    expect(stopped).toBe(false);
    s.release();
    expect(await stopping).toBe(true);
  });

  it("a call whose peer hung up still holds shutdown until its work has ended", async () => {
    const s = await slowServer();
    const client = await s.connect();
    const call = client.unary(Health.method.check, {});
    await waitFor(() => s.entered() === 1, { what: "the call in its handler" });
    client.close();
    await expect(call).rejects.toBeDefined();
    await waitFor(() => s.server.connectionCount === 0, { what: "the agent to see the hang-up" });
    let stopped = false;
    const stopping = s.server.shutdown(5_000).then((clean) => {
      stopped = true;
      return clean;
    });
    // not a wait: a stretch in which shutdown must not finish (its work is held); load only shortens it in effect
    await new Promise((r) => setTimeout(r, 200));
    expect(stopped).toBe(false);
    s.release();
    expect(await stopping).toBe(true);
  });
});
