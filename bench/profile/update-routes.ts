/**
 * Profiles the agent serving UpdateRoutes, for the "make it fast" work:
 * runs src/agent/main.ts from source inside a fresh bench netns under Bun's
 * CPU profiler (or strace -c -f), sends `--runs` N-route updates (table
 * reset between) and as many no-change repeats, then stops it by PID.
 *
 *   bun bench/profile/update-routes.ts [--n 10000] [--runs 3] [--strace] [--out /tmp/netagent-prof]
 *
 * Writes the .cpuprofile and its markdown summary (or strace's table) to --out.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { AgentClient } from "../../src/client/client";
import { start, waitForSocket } from "../../test/helpers/process";
import { createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { BUN, ROOT } from "../lib/proc";
import { updateRoutesPayload } from "../lib/route-set";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const n = Number(opt("--n", "10000"));
const runs = Number(opt("--runs", "3"));
const out = opt("--out", "/tmp/netagent-prof");
const useStrace = argv.includes("--strace");
mkdirSync(out, { recursive: true });

const ns = await createBenchNetns();
const sock = join(out, "agent.sock");
const agentArgv = [
  BUN,
  ...(useStrace ? [] : ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${out}`]),
  join(ROOT, "src/agent/main.ts"),
  "--listen",
  `unix://${sock}`,
  "--log-level",
  "warn",
];
const cmd = useStrace
  ? ["strace", "-c", "-f", "-o", join(out, "strace.txt"), ...agentArgv]
  : agentArgv;
const child = start("ip", ["netns", "exec", ns.name, ...cmd]);
try {
  await waitForSocket(child, sock, 30_000);
  const client = await AgentClient.connect(`unix://${sock}`);
  const payload = updateRoutesPayload(n);
  for (let i = 0; i < runs; i++) {
    await resetRoutes(ns);
    let t0 = performance.now();
    await client.raw("grpc.AgentService", "UpdateRoutes", payload, { timeoutMs: 300_000 });
    const first = performance.now() - t0;
    t0 = performance.now();
    await client.raw("grpc.AgentService", "UpdateRoutes", payload, { timeoutMs: 300_000 });
    const again = performance.now() - t0;
    console.log(`run ${i}: ${n} routes ${first.toFixed(0)} ms; no change ${again.toFixed(0)} ms`);
  }
  client.close();
  await child.stop("SIGTERM", 60_000);
} finally {
  await child.kill();
  await ns.remove();
}
console.log(`profile in ${out}`);
