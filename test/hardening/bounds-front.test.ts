/**
 * The bounds of front mode, each reached against dist/netagent --upstream
 * (docs/limits.md):
 * - forwarded calls in flight per connection (1,024): 1,100 long calls from
 *   containerd's Go client, counted at the stand-in upstream;
 * - bytes for an upstream that does not read (1 MiB before the caller's
 *   next requests wait; the connection closed after the stall timeout);
 * - answers for a caller that does not read (the upstream is no longer
 *   read from past 1 MiB unread): the front does not buffer the upstream's
 *   answers for it;
 * - a forwarded call past its deadline, at an upstream that ignores it:
 *   given up a grace after the deadline;
 * - connecting to a vsock upstream that does not answer: the front keeps
 *   serving meanwhile (the connect does not block it), then UNAVAILABLE.
 */
import { existsSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FORWARD_DEADLINE_GRACE_MS,
  MAX_UNREAD_ANSWER_BYTES,
  MAX_UNSENT_FORWARD_BYTES,
} from "../../src/common/limits";
import { Code } from "../../src/ttrpc/codes";
import { MAX_FORWARDED_CALLS_PER_CONNECTION } from "../../src/ttrpc/limits";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import {
  control,
  hex,
  type RunningUpstream,
  startUpstream,
  TEST_SERVICE,
} from "../helpers/upstream";
import { waitFor } from "../helpers/wait";
import { rawConnect, requestFrame } from "./raw";

const STALL_MS = 1500;
let dir: TempDir;
const cleanup: (() => unknown)[] = [];

beforeAll(() => {
  goPrograms();
  dir = tempDir("netagent-front-bounds-");
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
afterAll(() => dir?.remove());

async function front(upstream: string, readyOnSocket = false): Promise<RunningAgent> {
  const agent = await startAgent({
    readyOnSocket,
    args: [
      "--upstream",
      upstream.includes("://") ? upstream : `unix://${upstream}`,
      "--stall-timeout-ms",
      String(STALL_MS),
      "--log-level",
      "warn",
      "--ip-session",
      "off",
    ],
  });
  cleanup.push(() => agent.stop());
  return agent;
}

async function standIn(name: string): Promise<RunningUpstream> {
  const u = await startUpstream(dir.join(`${name}.sock`), dir.join(`${name}.log`), name);
  cleanup.push(() => u.stop());
  return u;
}

describe("front mode bounds", () => {
  it(`at most ${MAX_FORWARDED_CALLS_PER_CONNECTION} forwarded calls of one connection reach the upstream at once`, async () => {
    const upstream = await standIn("cap");
    const agent = await front(upstream.socket);
    const n = MAX_FORWARDED_CALLS_PER_CONNECTION + 76;
    const sleep = hex(control({ 1: 4000, 2: "cap" }));
    const [step] = await goClient(
      agent.socket,
      [{ service: TEST_SERVICE, method: "Sleep", payload: sleep, n, c: n }],
      { summary: true, timeoutMs: 60_000 },
    );
    expect(step?.codes).toEqual({ "0": n });
    const events = upstream.events();
    const firstEnd = events.find((e) => e.event === "sleep-ended")?.t ?? Infinity;
    const sleeps = events.filter((e) => e.event === "request" && e.method === "Sleep");
    expect(sleeps.filter((e) => e.t < firstEnd)).toHaveLength(MAX_FORWARDED_CALLS_PER_CONNECTION);
    expect(sleeps).toHaveLength(n);
  });

  it("an upstream that does not read holds at most the bound, then its connection is closed", async () => {
    // Accepts and never reads.
    const path = dir.join("deaf.sock");
    const sockets: Socket[] = [];
    const server: Server = createServer((s) => {
      s.pause();
      sockets.push(s);
    });
    await new Promise<void>((r) => server.listen(path, r));
    cleanup.push(() => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    });
    const agent = await front(path, true);
    const caller = await rawConnect(agent.socket);
    cleanup.push(() => caller.destroy());
    const big = new Uint8Array(1 << 20).fill(7);
    const frames = Buffer.concat(
      Array.from({ length: 8 }, (_, i) => requestFrame(2 * i + 1, TEST_SERVICE, "Echo", big)),
    );
    caller.write(frames);
    const first = await caller.answer(1, 20_000);
    expect(first.response?.status?.code).toBe(Code.UNAVAILABLE);
    const m = /^upstream unix:\/\/\S+: stalled \((\d+) bytes not taken for (\d+) ms\)$/.exec(
      first.response?.status?.message ?? "",
    );
    expect(m, first.response?.status?.message).not.toBeNull();
    // At most the bound, plus the one request that went over it.
    expect(Number(m?.[1])).toBeLessThanOrEqual(MAX_UNSENT_FORWARD_BYTES + big.length + 64);
    expect(Number(m?.[2])).toBeGreaterThanOrEqual(STALL_MS);
    expect(agent.child.stderr).toContain("upstream connection closed: upstream stalled");
  });
});

describe("front mode bounds: a caller that does not read, an upstream that does not answer", () => {
  it("a caller that does not read its answers: the upstream is no longer read for it", async () => {
    const upstream = await standIn("deafcaller");
    const agent = await front(upstream.socket);
    const caller = await rawConnect(agent.socket);
    cleanup.push(() => caller.destroy());
    caller.socket.pause();
    const size = 3 << 20;
    const n = 16;
    caller.write(
      Buffer.concat(
        Array.from({ length: n }, (_, i) =>
          requestFrame(2 * i + 1, TEST_SERVICE, "Answer", control({ 1: size, 2: i })),
        ),
      ),
    );
    // The stall timeout closes the caller; what waited for it is logged.
    await waitFor(() => agent.child.stderr.includes("peer stalled"), { timeoutMs: 20_000 });
    const line = agent.child.stderr.split("\n").find((l) => l.includes("peer stalled")) ?? "{}";
    const waited = JSON.parse(line).bufferedBytes as number;
    // All 16 answers (48 MiB) would be there without the bound; with it,
    // the 1 MiB bound plus the answers read in the turn that crossed it.
    expect(waited).toBeLessThan(MAX_UNREAD_ANSWER_BYTES + 2 * size);
    expect(upstream.requests().filter((r) => r.method === "Answer")).toHaveLength(n);
  });

  it("a forwarded call the upstream does not answer is given up a grace after its deadline", async () => {
    const upstream = await standIn("hang");
    const agent = await front(upstream.socket);
    const caller = await rawConnect(agent.socket);
    cleanup.push(() => caller.destroy());
    const deadlineMs = 300;
    const sent = performance.now();
    caller.write(
      requestFrame(1, TEST_SERVICE, "Hang", control({ 1: 10_000 }), deadlineMs * 1_000_000),
    );
    const a = await caller.answer(1, 10_000);
    const tookMs = performance.now() - sent;
    expect(a.response?.status?.code).toBe(Code.DEADLINE_EXCEEDED);
    expect(a.response?.status?.message).toBe(
      `deadline exceeded: upstream unix://${upstream.socket} did not answer in time`,
    );
    expect(tookMs).toBeGreaterThanOrEqual(deadlineMs + FORWARD_DEADLINE_GRACE_MS - 50);
    expect(tookMs).toBeLessThan(deadlineMs + FORWARD_DEADLINE_GRACE_MS + 2000);
  });

  it.skipIf(!vsockAvailable())(
    "a vsock upstream that does not answer: the front serves on while it connects",
    async () => {
      const ns = await Netns.create("nt-fvsock");
      cleanup.push(() => ns.remove());
      // CID 1 (this machine, through vsock loopback if it has it), port 1: nobody listens.
      const agent = await startAgent({
        netns: ns,
        readyOnSocket: true,
        args: ["--upstream", "vsock://1:1", "--log-level", "warn"],
      });
      cleanup.push(() => agent.stop());
      const forwarded = await rawConnect(agent.socket);
      cleanup.push(() => forwarded.destroy());
      const sent = performance.now();
      // With a deadline: at start-up a connect that finds nothing listening is tried again.
      forwarded.write(requestFrame(1, "grpc.Health", "Check", new Uint8Array(), 3_000_000_000));
      // Meanwhile a network call on another connection is served at once:
      // a blocking connect would hold the whole agent until it ended.
      const local = await rawConnect(agent.socket);
      cleanup.push(() => local.destroy());
      local.write(requestFrame(1, "grpc.AgentService", "ListInterfaces"));
      const served = await local.answer(1, 10_000);
      const servedMs = performance.now() - sent;
      const a = await forwarded.answer(1, 15_000);
      const failedMs = performance.now() - sent;
      expect(served.response?.status?.code ?? 0).toBe(Code.OK);
      expect(a.response?.status?.code).toBe(Code.UNAVAILABLE);
      expect(a.response?.status?.message).toMatch(
        /^upstream vsock:\/\/1:1: connect: (ECONNRESET|ETIMEDOUT|ENODEV|EHOSTUNREACH)$/,
      );
      // Only meaningful when the connect took a while (no vsock loopback: the kernel's 2 s).
      if (failedMs > 1500) expect(servedMs).toBeLessThan(failedMs - 1000);
    },
  );
});

function vsockAvailable(): boolean {
  return existsSync("/dev/vsock");
}
