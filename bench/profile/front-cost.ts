/**
 * The cost of front mode's forwarding: a no-op call (grpc.Health Check)
 * from containerd's Go client, through `netagent --upstream` to the Go
 * ttrpc server (test/interop/go/ttrpc-server) and straight to that same
 * server, interleaved (F U / U F / ...), at each concurrency. Prints per
 * concurrency the median calls/s of each path, the median per-round ratio
 * forwarded/direct with its range, what forwarding adds to a call (at c=1:
 * 1/rate forwarded - 1/rate direct), the front's CPU time per forwarded
 * call (all its threads, /proc/PID/task/TID/schedstat) and the load.
 *
 *   bun bench/profile/front-cost.ts [--bin dist/netagent] [--c 1,16] [--calls 20000] [--rounds 9]
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { goPrograms } from "../../test/helpers/go";
import { option } from "../lib/args";
import { median } from "../lib/stats";

const bin = option("--bin", "dist/netagent");
const concurrencies = option("--c", "1,16").split(",").map(Number);
const calls = Number(option("--calls", "20000"));
const rounds = Number(option("--rounds", "9"));
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

const go = goPrograms();
const dir = mkdtempSync(join(tmpdir(), "netagent-front-cost-"));
const socks = { upstream: join(dir, "upstream.sock"), front: join(dir, "front.sock") };
const procs: ChildProcess[] = [];

function cpuNs(pid: number): number {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ns;
}

function rate(sock: string, c: number, n = calls, quiet = false): number {
  const out = execFileSync(
    go["ttrpc-client"],
    ["-socket", sock, "-n", String(n), "-c", String(c), "-summary"],
    { encoding: "utf8", stdio: ["ignore", "pipe", quiet ? "ignore" : "inherit"] },
  );
  const step = (
    JSON.parse(out) as { steps: { codes: Record<string, number>; callsPerSec: number }[] }
  ).steps[0];
  if (step?.codes["0"] !== n) throw new Error(`not all calls OK: ${out}`);
  return step.callsPerSec;
}

async function ready(sock: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    try {
      rate(sock, 1, 1, true);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error(`${sock} never answered`);
}

const startLoad = load();
try {
  const start = (file: string, args: string[]) => {
    const p = spawn(file, args, { stdio: ["ignore", "ignore", "inherit"] });
    procs.push(p);
    return p.pid as number;
  };
  start(go["ttrpc-server"], ["-socket", socks.upstream]);
  await ready(socks.upstream);
  const frontPid = start(bin, [
    "--listen",
    `unix://${socks.front}`,
    "--upstream",
    `unix://${socks.upstream}`,
    "--log-level",
    "warn",
  ]);
  await ready(socks.front);
  for (const c of concurrencies) {
    rate(socks.front, c);
    rate(socks.upstream, c); // warm-up
    const r = { front: [] as number[], upstream: [] as number[] };
    const frontUs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const order =
        i % 2 === 0 ? (["front", "upstream"] as const) : (["upstream", "front"] as const);
      for (const k of order) {
        const c0 = k === "front" ? cpuNs(frontPid) : 0;
        r[k].push(rate(socks[k], c));
        if (k === "front") frontUs.push((cpuNs(frontPid) - c0) / 1000 / calls);
      }
    }
    const q = r.front.map((v, i) => v / (r.upstream[i] as number));
    const added = r.front.map((v, i) => (1 / v - 1 / (r.upstream[i] as number)) * 1e6);
    console.log(
      `c=${c} calls=${calls} rounds=${rounds}: forwarded ${median(r.front).toFixed(0)}/s, direct ${median(r.upstream).toFixed(0)}/s; ` +
        `forwarded/direct ${median(q).toFixed(2)} (${Math.min(...q).toFixed(2)}-${Math.max(...q).toFixed(2)}); ` +
        `added per call ${median(added).toFixed(1)} us (wall time / calls); front CPU per forwarded call ${median(frontUs).toFixed(2)} us; ` +
        `load ${startLoad} -> ${load()}`,
    );
  }
} finally {
  for (const p of procs)
    if (p.exitCode === null && p.pid !== undefined) process.kill(p.pid, "SIGTERM");
  await new Promise((r) => setTimeout(r, 200));
  rmSync(dir, { recursive: true, force: true });
}
