/**
 * Bounds on what a peer's bytes can make dist/netagent hold or run
 * (common/limits.ts, docs/limits.md), each hit against the binary in a fresh netns:
 * - repeated fields are counted before decoding: a 4 MiB run of `0a 00`
 *   (two million empty routes) is refused RESOURCE_EXHAUSTED naming the
 *   field;
 * - concurrent `ip` processes: one write of 2,000 ListRoutes frames (10,000 once ran
 *   8,034 `ip` processes at once), counted as the agent's children.
 */
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_IP_PROCESSES } from "../../src/common/limits";
import { Code } from "../../src/ttrpc/codes";
import { MAX_REPEATED_ENTRIES } from "../../src/ttrpc/limits";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { rawConnect, requestFrame, vmRssKiB } from "./raw";

let ns: Netns;
let agent: RunningAgent;

beforeAll(async () => {
  ns = await Netns.create("nt-bounds");
  await ns.veth("eth0", "peer0");
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  agent = await startHardenedAgent({
    netns: ns,
    args: ["--log-level", "error"],
  });
});

afterAll(async () => {
  await agent?.stop();
  await ns?.remove();
});

/**
 * One-shot children of `pid` now: the union of its threads' `children`
 * lists (a child is listed under the thread that forked it), less the
 * resident `ip -json -details -batch -` (ip-session.ts), which the limit
 * leaves out. Cheap enough to poll often without starving this process's
 * own socket.
 */
function children(pid: number): { oneShot: number; resident: number } {
  const n = { oneShot: 0, resident: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const list = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
      for (const child of list ? list.split(" ") : []) {
        if (isResidentIp(child)) n.resident++;
        else n.oneShot++;
      }
    } catch {
      // The thread ended meanwhile.
    }
  }
  return n;
}

function isResidentIp(pid: string): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return argv.slice(1, 5).join(" ") === "-json -details -batch -";
  } catch {
    return false;
  }
}

describe("memory and processes a peer can make the agent spend", () => {
  it("a 4 MiB run of 0a 00 in UpdateRoutes: RESOURCE_EXHAUSTED naming routes.Routes", async () => {
    const n = (4 << 20) / 2 - 40;
    const inner = new Uint8Array(2 * n);
    for (let i = 0; i < n; i++) inner[2 * i] = 0x0a;
    const len = [(inner.length & 0x7f) | 0x80, ((inner.length >> 7) & 0x7f) | 0x80];
    len.push(((inner.length >> 14) & 0x7f) | 0x80, inner.length >> 21);
    const payload = new Uint8Array(1 + len.length + inner.length);
    payload.set([0x0a, ...len]);
    payload.set(inner, 1 + len.length);
    const before = vmRssKiB(agent.child.pid);
    const c = await rawConnect(agent.socket);
    try {
      c.write(requestFrame(1, "grpc.AgentService", "UpdateRoutes", payload));
      const a = await c.answer(1, 30_000);
      expect(a.response?.status?.code).toBe(Code.RESOURCE_EXHAUSTED);
      expect(a.response?.status?.message).toBe(
        `routes.Routes: more than ${MAX_REPEATED_ENTRIES} entries (the agent's limit)`,
      );
    } finally {
      c.destroy();
    }
    const grown = vmRssKiB(agent.child.pid) - before;
    console.log(`2 million empty routes refused: agent RSS grew ${grown} KiB`);
    // Two million Route objects would be hundreds of MiB.
    expect(grown).toBeLessThan(64 * 1024);
  });

  it(`2,000 ListRoutes in one write: at most ${MAX_IP_PROCESSES} one-shot ip processes at once and the resident one, all answered`, async () => {
    const n = 2_000;
    const frames = Buffer.concat(
      Array.from({ length: n }, (_, i) =>
        requestFrame(2 * i + 1, "grpc.AgentService", "ListRoutes"),
      ),
    );
    const c = await rawConnect(agent.socket);
    let peak = 0;
    let residents = 0;
    const poll = setInterval(() => {
      const now = children(agent.child.pid);
      peak = Math.max(peak, now.oneShot);
      residents = Math.max(residents, now.resident);
    }, 10);
    try {
      c.write(frames);
      await waitFor(() => c.answers.length >= n, { timeoutMs: 240_000, what: `${n} answers` });
    } finally {
      clearInterval(poll);
      c.destroy();
    }
    const codes = new Set(c.answers.map((a) => a.response?.status?.code ?? 0));
    expect([...codes]).toEqual([0]);
    console.log(`${n} pipelined ListRoutes: peak ${peak} ip processes (limit ${MAX_IP_PROCESSES})`);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(MAX_IP_PROCESSES);
    expect(residents).toBeLessThanOrEqual(1);
  }, 250_000);
});
