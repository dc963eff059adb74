/**
 * Slow and stalled peers against dist/netagent with a short stall timeout:
 * half a frame then silence, a slow-loris trickle that never completes a
 * frame, and a peer that never reads its answers. Each stalled connection is
 * closed after the timeout with a log line; an idle but healthy connection is
 * kept; other connections are served all along; memory stays bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";
import type { RunningAgent } from "../helpers/agent";
import { pbEncodeRequest } from "../helpers/envelope-pbjs";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { checkFrame, checkOnFreshConnection, rawConnect, socketFds, vmRssKiB } from "./raw";

const STALL_MS = 1000;
let agent: RunningAgent;
/** Sockets the idle agent holds (the listener): connections come on top. */
let baseFds: number;

beforeAll(async () => {
  agent = await startHardenedAgent({
    // Without the resident ip: its stdio are sockets too (Bun's child pipes
    // are socketpairs), and this file counts the agent's sockets to peers.
    args: ["--stall-timeout-ms", String(STALL_MS), "--log-level", "warn", "--ip-session", "off"],
  });
  // The listener, once the readiness probes' connections are gone.
  baseFds = await waitFor(() => socketFds(agent.child.pid) === 1 && 1);
});

afterAll(async () => {
  await agent?.stop();
});

/** Checks on a second connection, every 50 ms, until `until` settles; all must answer. */
async function keepChecking(until: Promise<unknown>): Promise<number> {
  const c = await rawConnect(agent.socket);
  let id = 1;
  let done = false;
  until.finally(() => {
    done = true;
  });
  try {
    while (!done) {
      c.write(checkFrame(id));
      const a = await c.answer(id, 5000);
      expect(a.response?.status?.code ?? 0).toBe(0);
      id += 2;
      // not a wait: the pace of the healthy peer's checks while the stalled ones are timed out
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    c.destroy();
  }
  return (id - 1) / 2;
}

function stalledLines(reason: string): number {
  return agent.child.stderr
    .split("\n")
    .filter((l) => l.includes("peer stalled") && l.includes(reason)).length;
}

describe("stalled peers are closed after the stall timeout", () => {
  it("half a header, half a body, and a slow-loris trickle: closed; others served meanwhile", async () => {
    const frame = encodeFrame(
      1,
      FrameType.Request,
      0,
      pbEncodeRequest({ service: "grpc.Health", method: "Check", payload: new Uint8Array(4000) }),
    );
    const halfHeader = await rawConnect(agent.socket);
    halfHeader.write(frame.subarray(0, 5));
    const halfBody = await rawConnect(agent.socket);
    halfBody.write(frame.subarray(0, 10 + 2000));
    // A header that announces 4 MiB, then one byte every 100 ms: bytes keep
    // coming but no frame ever completes.
    const loris = await rawConnect(agent.socket);
    const big = new Uint8Array(10);
    new DataView(big.buffer).setUint32(0, 4 << 20);
    new DataView(big.buffer).setUint32(4, 1);
    big[8] = FrameType.Request;
    loris.write(big);
    const trickle = setInterval(() => loris.write(new Uint8Array([0x0a])), 100);
    // An idle connection with nothing half-sent is a healthy shim: kept.
    const idle = await rawConnect(agent.socket);
    idle.write(checkFrame(1));
    await idle.answer(1);

    const started = performance.now();
    const allClosed = Promise.all([halfHeader.closed, halfBody.closed, loris.closed]);
    const served = await keepChecking(
      waitFor(() => halfHeader.isClosed() && halfBody.isClosed() && loris.isClosed(), {
        timeoutMs: 10 * STALL_MS,
        what: "the stalled connections to be closed",
      }),
    );
    await allClosed;
    clearInterval(trickle);
    const took = performance.now() - started;
    expect(took).toBeGreaterThan(STALL_MS * 0.9);
    expect(took).toBeLessThan(STALL_MS * 5);
    expect(served).toBeGreaterThan(5);
    await waitFor(() => stalledLines("frame left unfinished") >= 3, { what: "3 log lines" });

    // The idle one outlived the stalled ones by far, and still works.
    // not a wait: the idle connection must outlive the stall timeout by far: the time is what is checked
    await new Promise((r) => setTimeout(r, 2 * STALL_MS));
    expect(idle.isClosed()).toBe(false);
    idle.write(checkFrame(3));
    expect((await idle.answer(3)).response?.status?.code ?? 0).toBe(0);
    idle.destroy();
  });

  it("a peer that never reads: reading from it pauses, it is closed, memory stays bounded", async () => {
    const request = pbEncodeRequest({ service: "grpc.Health", method: "Check" });
    // 300,000 Checks (9 MB) a round: far more answers than socket buffers hold.
    const n = 300_000;
    const frames = Buffer.concat(
      Array.from({ length: n }, (_, i) => encodeFrame(2 * i + 1, FrameType.Request, 0, request)),
    );
    const rss: number[] = [];
    for (let round = 0; round < 3; round++) {
      const deaf = await rawConnect(agent.socket);
      deaf.socket.pause();
      deaf.write(frames);
      const served = await keepChecking(
        waitFor(() => deaf.isClosed(), {
          timeoutMs: 20 * STALL_MS,
          what: "the deaf peer to be closed",
        }),
      );
      // (The first answer can be slow: this process is busy pushing 9 MB.)
      expect(served).toBeGreaterThanOrEqual(1);
      await waitFor(() => stalledLines("answers left unread") > round, { what: "the log line" });
      rss.push(vmRssKiB(agent.child.pid));
    }
    // What waited for the peer when it was closed: a bounded backlog, not
    // 300,000 answers (4.8 MB).
    const backlogs = agent.child.stderr
      .split("\n")
      .filter((l) => l.includes("answers left unread"))
      .map((l) => JSON.parse(l).bufferedBytes as number);
    expect(backlogs).toHaveLength(3);
    for (const b of backlogs) expect(b).toBeLessThan(1 << 20);
    // The first round warms the heap. Answering all 3 x 300,000 into memory
    // would hold well over 150 MiB; what is left is the allocator keeping
    // freed pages (tens of MiB on a loaded machine, a few when idle).
    expect((rss[2] as number) - (rss[0] as number)).toBeLessThan(96 * 1024);
    expect(await checkOnFreshConnection(agent.socket)).toBe(0);
    // Nothing held for the closed peers.
    await waitFor(() => socketFds(agent.child.pid) <= baseFds, {
      what: "the agent to hold no connection sockets",
    });
  });
});
