/**
 * Before/after for a change on the Check path: two agent builds (A = old,
 * B = new) and the Go ttrpc server (test/interop/go), all up at once, each
 * driven by containerd's Go client (-n CALLS -c C -summary) with the order
 * rotating every round (A B G / G B A / B A G / ...). Prints each side's
 * median calls/s, the median per-round ratios B/A, A/G and B/G, each
 * server's median CPU time per call (all its threads, from
 * /proc/PID/task/TID/schedstat: less noisy than throughput on a shared
 * machine), and the load average beside them.
 *
 *   bun bench/profile/go-client-ab.ts --a OLD_BINARY --b NEW_BINARY [--c 16] [--calls 30000] [--rounds 11]
 *
 * (--a and --b may name the same build to see the noise.)
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { goPrograms } from "../../test/helpers/go";
import { option } from "../lib/args";
import { median } from "../lib/stats";

const opt = option;
const bins = { a: opt("--a"), b: opt("--b") };
const conc = Number(opt("--c", "16"));
const calls = Number(opt("--calls", "30000"));
const rounds = Number(opt("--rounds", "11"));
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

const go = goPrograms();
const dir = mkdtempSync(join(tmpdir(), "netagent-go-ab-"));
const socks = { a: join(dir, "a.sock"), b: join(dir, "b.sock"), g: join(dir, "g.sock") };
const procs: ChildProcess[] = [];
const pids: Record<string, number> = {};
const startOne = (file: string, args: string[]) => {
  const p = spawn(file, args, { stdio: ["ignore", "ignore", "inherit"] });
  procs.push(p);
  return p;
};

/** CPU time of all of `pid`'s threads so far, in ns. */
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

function rate(sock: string): number {
  const out = execFileSync(
    go["ttrpc-client"],
    ["-socket", sock, "-n", String(calls), "-c", String(conc), "-summary"],
    { encoding: "utf8" },
  );
  const step = (
    JSON.parse(out) as { steps: { codes: Record<string, number>; callsPerSec: number }[] }
  ).steps[0];
  if (step?.codes["0"] !== calls) throw new Error(`not all calls OK: ${out}`);
  return step.callsPerSec;
}

async function ready(sock: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    try {
      execFileSync(go["ttrpc-client"], ["-socket", sock, "-n", "1", "-summary"], {
        stdio: "ignore",
      });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error(`${sock} never answered`);
}

const startLoad = load();
try {
  pids.a = startOne(bins.a, ["--listen", `unix://${socks.a}`, "--log-level", "warn"]).pid as number;
  pids.b = startOne(bins.b, ["--listen", `unix://${socks.b}`, "--log-level", "warn"]).pid as number;
  pids.g = startOne(go["ttrpc-server"], ["-socket", socks.g]).pid as number;
  for (const s of Object.values(socks)) await ready(s);
  const orders = [
    ["a", "b", "g"],
    ["g", "b", "a"],
    ["b", "a", "g"],
    ["g", "a", "b"],
    ["a", "g", "b"],
    ["b", "g", "a"],
  ] as const;
  for (const k of ["a", "b", "g"] as const) rate(socks[k]); // warm-up
  const r = { a: [] as number[], b: [] as number[], g: [] as number[] };
  const us = { a: [] as number[], b: [] as number[], g: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    for (const k of orders[i % orders.length] as readonly ("a" | "b" | "g")[]) {
      const c0 = cpuNs(pids[k] as number);
      r[k].push(rate(socks[k]));
      us[k].push((cpuNs(pids[k] as number) - c0) / 1000 / calls);
    }
  }
  const ratio = (x: number[], y: number[]) => median(x.map((v, i) => v / (y[i] as number)));
  const range = (x: number[], y: number[]) => {
    const q = x.map((v, i) => v / (y[i] as number));
    return `${Math.min(...q).toFixed(2)}-${Math.max(...q).toFixed(2)}`;
  };
  console.log(
    `c=${conc} calls=${calls} rounds=${rounds}: A ${median(r.a).toFixed(0)}/s, B ${median(r.b).toFixed(0)}/s, Go ${median(r.g).toFixed(0)}/s; ` +
      `B/A ${ratio(r.b, r.a).toFixed(2)} (${range(r.b, r.a)}), A/Go ${ratio(r.a, r.g).toFixed(2)} (${range(r.a, r.g)}), B/Go ${ratio(r.b, r.g).toFixed(2)} (${range(r.b, r.g)}); ` +
      `server CPU per call: A ${median(us.a).toFixed(2)} us, B ${median(us.b).toFixed(2)} us (B/A ${ratio(us.b, us.a).toFixed(2)}), Go ${median(us.g).toFixed(2)} us; ` +
      `load ${startLoad} -> ${load()}`,
  );
} finally {
  for (const p of procs)
    if (p.exitCode === null && p.pid !== undefined) process.kill(p.pid, "SIGTERM");
  await new Promise((r) => setTimeout(r, 200));
  rmSync(dir, { recursive: true, force: true });
}
