/**
 * Calls in flight per connection, end to end over a real unix socket
 * (AgentServer + the socket transport, in process so the handler can be
 * held): a peer pipelining 100,000 requests gets at most the cap running;
 * the agent stops reading from it (the rest stay in the peer's send
 * buffer) until calls end, then serves every one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentServer } from "../../src/agent/server/server";
import { createLogger } from "../../src/common/log";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { listenUnix } from "../../src/transport/socket-listener";
import { Code } from "../../src/ttrpc/codes";
import { MAX_CALLS_PER_CONNECTION } from "../../src/ttrpc/limits";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { checkFrame, rawConnect, requestFrame } from "./raw";

let dir: TempDir | undefined;
let server: AgentServer | undefined;
afterEach(async () => {
  await server?.shutdown(100);
  dir?.remove();
});

describe("calls in flight per connection", () => {
  it(`100,000 pipelined calls: at most ${MAX_CALLS_PER_CONNECTION} run, reading pauses, all answered`, async () => {
    dir = tempDir();
    const socket = dir.join("agent.sock");
    let running = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const registry = new ServiceRegistry().register(Health, {
      check: async () => {
        running++;
        peak = Math.max(peak, running);
        await gate;
        running--;
        return { status: HealthCheckResponse_ServingStatus.SERVING };
      },
    });
    server = new AgentServer({ registry, log: createLogger("error"), maxConnections: 8 });
    server.addListener(await listenUnix(socket, server.accept));
    const peer = await rawConnect(socket);
    const n = 100_000;
    peer.write(Buffer.concat(Array.from({ length: n }, (_, i) => checkFrame(2 * i + 1))));
    await waitFor(() => running === MAX_CALLS_PER_CONNECTION, { what: "the cap to be reached" });
    // The agent has stopped reading: most of the 2.6 MB stays on our side.
    let last = -1;
    await waitFor(
      () => {
        const same = peer.socket.writableLength === last;
        last = peer.socket.writableLength;
        return same;
      },
      { intervalMs: 200, what: "our send buffer to stop draining" },
    );
    expect(peer.socket.writableLength).toBeGreaterThan(1_000_000);
    expect(peak).toBe(MAX_CALLS_PER_CONNECTION);
    // Other connections are served meanwhile (an unknown method is answered at once).
    const other = await rawConnect(socket);
    other.write(requestFrame(1, "grpc.Health", "Nope"));
    expect((await other.answer(1)).response?.status?.code).toBe(Code.UNIMPLEMENTED);
    other.destroy();
    release();
    await waitFor(() => peer.answers.length === n, { timeoutMs: 120_000, what: `${n} answers` });
    expect(peak).toBe(MAX_CALLS_PER_CONNECTION);
    peer.destroy();
  }, 150_000);
});
