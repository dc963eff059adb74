/**
 * Bounds on what peers can make dist/netagent queue, hold open and log
 * (common/limits.ts, docs/limits.md), each hit against the binary:
 * - the write queue: 160 UpdateRoutes at once over five connections while
 *   each takes ~0.3 s (a slow stand-in `ip`): beyond 128 waiting, refused
 *   RESOURCE_EXHAUSTED; those whose deadline passed while waiting never
 *   start (counted by the stand-in);
 * - idle connections at the cap: a new connection is refused while every
 *   slot is busy or recently used, and gets the slot of one idle past
 *   --idle-timeout-ms;
 * - log volume: 1,000 failed calls quoting a 20 KB value write a bounded
 *   number of short lines, and say how many were suppressed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { LOG_BURST, LOG_LINES_PER_SEC, MAX_QUEUED_WRITES } from "../../src/common/limits";
import { Code } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { slowIp } from "./fake-ip";
import { checkFrame, checkOnFreshConnection, type RawConn, rawConnect, requestFrame } from "./raw";

let agent: RunningAgent | undefined;
let ns: Netns | undefined;
let dir: TempDir | undefined;
const conns: RawConn[] = [];

afterEach(async () => {
  for (const c of conns.splice(0)) c.destroy();
  await agent?.stop();
  await ns?.remove();
  dir?.remove();
  agent = ns = dir = undefined;
});

/** UpdateRoutesRequest{routes: Routes{Routes: [Route{device}]}} by hand (field 3 of Route). */
function updateRoutesPayload(device?: string): Uint8Array {
  if (device === undefined) return Uint8Array.of(0x0a, 0x00);
  const d = Buffer.from(device);
  const varint = (n: number) => {
    const out: number[] = [];
    for (; n > 0x7f; n >>>= 7) out.push((n & 0x7f) | 0x80);
    out.push(n);
    return out;
  };
  const route = Buffer.concat([Buffer.from([0x1a, ...varint(d.length)]), d]);
  const routes = Buffer.concat([Buffer.from([0x0a, ...varint(route.length)]), route]);
  return Uint8Array.from(Buffer.concat([Buffer.from([0x0a, ...varint(routes.length)]), routes]));
}

describe("bounds a peer reaches", () => {
  it(`the write queue: more than ${MAX_QUEUED_WRITES} waiting changes are refused; expired ones never start`, async () => {
    ns = await Netns.create("nt-queue");
    dir = tempDir("netagent-queue-");
    // Every exchange with ip (a one-shot run, or one of a resident session's) takes 0.3 s.
    const slow = slowIp(dir, 300);
    agent = await startHardenedAgent({
      netns: ns,
      args: ["--log-level", "error", "--ip-bin", slow.bin],
    });
    const before = slow.exchanges();
    for (let c = 0; c < 5; c++) conns.push(await rawConnect(agent.socket));
    const timeoutNano = 4e9;
    conns.forEach((c) => {
      const frames = Array.from({ length: 32 }, (_, i) =>
        requestFrame(
          2 * i + 1,
          "grpc.AgentService",
          "UpdateRoutes",
          updateRoutesPayload(),
          timeoutNano,
        ),
      );
      c.write(Buffer.concat(frames));
    });
    await waitFor(() => conns.every((c) => c.answers.length === 32), {
      timeoutMs: 60_000,
      what: "160 answers",
    });
    const codes: Record<string, number> = {};
    for (const c of conns) {
      for (const a of c.answers) {
        const name = Code[a.response?.status?.code ?? 0] as string;
        codes[name] = (codes[name] ?? 0) + 1;
      }
    }
    const refused = conns
      .flatMap((c) => c.answers)
      .find((a) => a.response?.status?.code === Code.RESOURCE_EXHAUSTED);
    expect(refused?.response?.status?.message).toMatch(/^too many changes waiting/);
    // One runs, 128 wait: at least 160 - 129 are refused at once.
    expect(codes.RESOURCE_EXHAUSTED).toBeGreaterThanOrEqual(160 - MAX_QUEUED_WRITES - 1);
    // Each change that starts runs ip at least once (0.3 s each): the ones whose
    // deadline passed while they waited were answered without running.
    // not a wait: a window for changes still in flight to run ip; a slower machine only counts fewer runs against the upper bound
    await new Promise((r) => setTimeout(r, 1000));
    const runs = slow.exchanges() - before;
    console.log(`160 queued changes: ${JSON.stringify(codes)}; ip runs ${runs}`);
    expect(codes.DEADLINE_EXCEEDED).toBeGreaterThan(50);
    expect(runs).toBeLessThan(40);
    expect(await checkOnFreshConnection(agent.socket)).toBe(0);
  }, 90_000);
});

describe("bounds a peer reaches: idle connections, log lines", () => {
  it("at the connection cap an idle connection gives way after --idle-timeout-ms, not before", async () => {
    agent = await startHardenedAgent({
      args: ["--log-level", "warn", "--max-connections", "3", "--idle-timeout-ms", "1500"],
    });
    // The readiness probes' connections are gone once three fresh ones fit.
    await waitFor(async () => (await checkOnFreshConnection(agent?.socket as string)) === 0);
    for (let i = 0; i < 3; i++) {
      const c = await rawConnect(agent.socket);
      c.write(checkFrame(1));
      await c.answer(1);
      conns.push(c);
    }
    // All three were used just now: a fourth is refused.
    await expect(checkOnFreshConnection(agent.socket)).rejects.toThrow(/closed/);
    // not a wait: the idle time the bound is about (1.5 s), passed; load only makes the connections idler
    await new Promise((r) => setTimeout(r, 1700));
    expect(await checkOnFreshConnection(agent.socket)).toBe(0);
    // The close reaches this side (and the log line the pipe) a moment after
    // the new connection was answered.
    await waitFor(() => conns.some((c) => c.isClosed()), { what: "the idle connection's close" });
    await waitFor(() => agent?.child.stderr.includes("room made for a new one"), {
      what: "the log line",
    });
    expect(conns.filter((c) => c.isClosed())).toHaveLength(1);
    expect(agent.child.stderr).toContain("connection closed: idle, room made for a new one");
  }, 30_000);

  it("1,000 failed calls quoting a 20 KB value: a bounded number of short log lines", async () => {
    agent = await startHardenedAgent({ args: ["--log-level", "info"] });
    const c = await rawConnect(agent.socket);
    conns.push(c);
    const payload = updateRoutesPayload("\\".repeat(20_000));
    const started = performance.now();
    const n = 1000;
    for (let i = 0; i < n; i += 100) {
      c.write(
        Buffer.concat(
          Array.from({ length: 100 }, (_, k) =>
            requestFrame(2 * (i + k) + 1, "grpc.AgentService", "UpdateRoutes", payload),
          ),
        ),
      );
    }
    await waitFor(() => c.answers.length === n, { timeoutMs: 60_000, what: `${n} answers` });
    const seconds = (performance.now() - started) / 1000;
    expect(c.answers.every((a) => a.response?.status?.code === Code.INVALID_ARGUMENT)).toBe(true);
    // not a wait: the log limiter's one-second window, passed, so the next call may log and the suppressed count is printed
    await new Promise((r) => setTimeout(r, 1000));
    c.write(requestFrame(2 * n + 1, "grpc.AgentService", "UpdateRoutes", payload));
    await c.answer(2 * n + 1);
    const lines = agent.child.stderr.split("\n").filter(Boolean);
    const failed = lines.filter((l) => l.includes('"msg":"call failed"'));
    const suppressed = lines
      .filter((l) => l.includes('"msg":"log lines suppressed"'))
      .reduce((sum, l) => sum + (JSON.parse(l).suppressed as number), 0);
    console.log(
      `${n + 1} failed calls in ${seconds.toFixed(1)} s: ${failed.length} lines, ${suppressed} suppressed, longest ${Math.max(...lines.map((l) => l.length))} bytes`,
    );
    expect(failed.length).toBeLessThanOrEqual(LOG_BURST + LOG_LINES_PER_SEC * (seconds + 2) + 1);
    expect(failed.length + suppressed).toBe(n + 1);
    for (const l of lines) expect(l.length).toBeLessThan(2048);
  }, 90_000);
});
