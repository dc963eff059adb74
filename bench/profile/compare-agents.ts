/**
 * Before/after for a performance fix: two agent binaries in one bench
 * netns, UpdateRoutes of N routes (table reset before each) and the
 * no-change call after it and that call's repeat (the same request, the
 * table unchanged), interleaved A B / B A; prints medians and the median
 * per-pair ratio B/A. With `--first-call`, each run is a freshly started
 * agent's first call (and its second, the no-change one), the agents'
 * start not timed.
 *
 *   bun bench/profile/compare-agents.ts --a OLD_BINARY --b NEW_BINARY [--n 1000] [--pairs 7] [--first-call]
 */
import { AgentClient } from "../../src/client/client";
import { type Child, start, waitForSocket } from "../../test/helpers/process";
import { tempDir } from "../../test/helpers/tmp";
import { flag, option } from "../lib/args";
import { createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { updateRoutesPayload } from "../lib/route-set";
import { median } from "../lib/stats";

const opt = option;
const bins = { a: opt("--a"), b: opt("--b") };
const n = Number(opt("--n", "1000"));
const pairs = Number(opt("--pairs", "7"));
const firstCall = flag("--first-call");

const ns = await createBenchNetns();
const dir = tempDir("netagent-compare-");
const children: Child[] = [];
try {
  const clients: Record<"a" | "b", AgentClient> = {} as never;
  const agents: Record<"a" | "b", Child> = {} as never;
  let started = 0;
  const startAgent = async (k: "a" | "b") => {
    const sock = dir.join(`${k}-${started++}.sock`);
    const child = start("ip", [
      "netns",
      "exec",
      ns.name,
      bins[k],
      "--listen",
      `unix://${sock}`,
      "--log-level",
      "warn",
    ]);
    children.push(child);
    agents[k] = child;
    await waitForSocket(child, sock);
    clients[k] = await AgentClient.connect(`unix://${sock}`);
  };
  for (const k of ["a", "b"] as const) await startAgent(k);
  const payload = updateRoutesPayload(n);
  const call = async (k: "a" | "b") => {
    const t0 = performance.now();
    await clients[k].raw("grpc.AgentService", "UpdateRoutes", payload, { timeoutMs: 300_000 });
    return performance.now() - t0;
  };
  const t = {
    a: [] as number[],
    b: [] as number[],
    a2: [] as number[],
    b2: [] as number[],
    a3: [] as number[],
    b3: [] as number[],
  };
  const once = async (k: "a" | "b") => {
    await resetRoutes(ns);
    if (firstCall) {
      // A fresh agent in place of k's, answering Check (as ready means), then its first call.
      clients[k].close();
      await agents[k].kill();
      await startAgent(k);
      await clients[k].raw("grpc.Health", "Check", new Uint8Array(), { timeoutMs: 30_000 });
    }
    t[k].push(await call(k));
    t[`${k}2`].push(await call(k));
    t[`${k}3`].push(await call(k));
  };
  await once("a");
  await once("b");
  for (const list of Object.values(t)) list.length = 0;
  for (let i = 0; i < pairs; i++) {
    for (const k of i % 2 === 0 ? (["a", "b"] as const) : (["b", "a"] as const)) await once(k);
  }
  const ratio = (x: number[], y: number[]) => median(y.map((v, i) => v / (x[i] as number)));
  console.log(
    `N=${n}, ${pairs} pairs${firstCall ? ", each run a fresh agent's first and second call" : ""}`,
  );
  console.log(
    `apply:     a ${median(t.a).toFixed(1)} ms, b ${median(t.b).toFixed(1)} ms, b/a ${ratio(t.a, t.b).toFixed(2)}`,
  );
  console.log(
    `no change: a ${median(t.a2).toFixed(1)} ms, b ${median(t.b2).toFixed(1)} ms, b/a ${ratio(t.a2, t.b2).toFixed(2)}`,
  );
  console.log(
    `repeated:  a ${median(t.a3).toFixed(1)} ms, b ${median(t.b3).toFixed(1)} ms, b/a ${ratio(t.a3, t.b3).toFixed(2)}`,
  );
  for (const c of Object.values(clients)) c.close();
} finally {
  for (const c of children) await c.kill();
  dir.remove();
  await ns.remove();
}
