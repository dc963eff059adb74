/**
 * Figures for the ttRPC closing note (not part of the test command):
 *
 *   node_modules/.bin/bun bench/ttrpc/bench.ts [--pairs 7] [--calls 20000] [--starts 20]
 *
 * ($NETAGENT_BIN names another agent build to measure.)
 *
 * - size of dist/netagent and dist/netagentctl;
 * - time from exec of dist/netagent to its first answered grpc.Health/Check
 *   (median of 20; the probe retries connect every 1 ms and sends a
 *   hand-encoded Check frame);
 * - idle RSS (VmRSS from /proc/PID/status) just after the first Check and
 *   after 2 s idle;
 * - Check calls/s from containerd's Go ttrpc client (test/interop/go) at
 *   concurrency 1 and 16 on one connection, against netagent (A) and against
 *   the Go ttrpc server (B), interleaved A B / B A, medians and ratios; the
 *   same with our TS client (src/client/client.ts) running in this process.
 *
 * Both servers are direct children of this script, started the same way.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { connect } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentClient } from "../../src/client/client";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { goPrograms } from "../../test/helpers/go";
import { CHECK_FRAME } from "../lib/proc";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** dist/netagent, or the build named by $NETAGENT_BIN. */
const NETAGENT = process.env.NETAGENT_BIN ?? join(ROOT, "dist/netagent");
const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const PAIRS = opt("--pairs", 7);
const CALLS = opt("--calls", 20_000);
const STARTS = opt("--starts", 20);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const rssKiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);

/** One Check over a fresh connection; resolves true on a Response for stream 1. */
function tryCheck(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    let got = Buffer.alloc(0);
    s.on("error", () => resolve(false));
    s.on("connect", () => s.write(CHECK_FRAME));
    s.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 10 && got.length >= 10 + got.readUInt32BE(0)) {
        s.destroy();
        resolve(got[8] === 2 && got.readUInt32BE(4) === 1);
      }
    });
  });
}

async function untilCheck(path: string, proc: ChildProcess): Promise<void> {
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}`);
    if (await tryCheck(path)) return;
    await new Promise((r) => setTimeout(r, 1));
  }
}

function startServer(file: string, argv: string[]): ChildProcess {
  return spawn(file, argv, { stdio: ["ignore", "ignore", "ignore"] });
}

async function stop(proc: ChildProcess) {
  if (proc.exitCode !== null || proc.pid === undefined) return;
  const exited = new Promise((r) => proc.once("exit", r));
  process.kill(proc.pid, "SIGTERM");
  await exited;
}

function goRate(client: string, socket: string, c: number): number {
  const out = execFileSync(
    client,
    ["-socket", socket, "-n", String(CALLS), "-c", String(c), "-summary"],
    { encoding: "utf8" },
  );
  const step = (
    JSON.parse(out) as { steps: { codes: Record<string, number>; callsPerSec: number }[] }
  ).steps[0];
  if (step?.codes["0"] !== CALLS) throw new Error(`not all calls OK: ${out}`);
  return step.callsPerSec;
}

/** "netagent X; Go server Y; ratio R (per-pair ratios a–b)" from paired rates. */
function comparison(ra: number[], rb: number[]): string {
  const ma = median(ra);
  const mb = median(rb);
  const ratios = ra.map((x, i) => x / (rb[i] as number));
  return `netagent ${ma.toFixed(0)}; Go server ${mb.toFixed(0)}; ratio ${(ma / mb).toFixed(2)} (per-pair ratios ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
}

/** CALLS Checks through `client`, `c` at a time; calls/s. */
async function tsRate(client: AgentClient, c: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next++ < CALLS) {
        const r = await client.unary(Health.method.check, {});
        if (r.status !== HealthCheckResponse_ServingStatus.SERVING) throw new Error("not SERVING");
      }
    }),
  );
  return CALLS / ((performance.now() - t0) / 1000);
}

/** Exec to the first answered Check, and the RSS then ({@link STARTS} starts). */
async function startRows(dir: string, rows: string[][]): Promise<void> {
  const startMs: number[] = [];
  const rssFirst: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const sock = join(dir, `start-${i}.sock`);
    const t0 = performance.now();
    const p = startServer(NETAGENT, ["--listen", `unix://${sock}`]);
    await untilCheck(sock, p);
    startMs.push(performance.now() - t0);
    rssFirst.push(rssKiB(p.pid as number));
    await stop(p);
  }
  rows.push([
    `exec -> first answered Check (median of ${STARTS})`,
    `${median(startMs).toFixed(1)} ms (min ${Math.min(...startMs).toFixed(1)}, max ${Math.max(...startMs).toFixed(1)})`,
  ]);
  rows.push([
    "RSS just after the first Check (median)",
    `${(median(rssFirst) / 1024).toFixed(1)} MiB`,
  ]);
}

async function main() {
  const loadAtStart = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const dir = mkdtempSync(join(tmpdir(), "netagent-bench-"));
  const go = goPrograms();
  const rows: string[][] = [];
  try {
    // Sizes.
    for (const [name, path] of [
      ["dist/netagent", NETAGENT],
      ["dist/netagentctl", join(ROOT, "dist/netagentctl")],
    ] as const) {
      const size = statSync(path).size;
      rows.push([`size of ${name}`, `${(size / 1048576).toFixed(1)} MiB (${size} bytes)`]);
    }

    await startRows(dir, rows);

    // Both servers up for the throughput runs; idle RSS first.
    const aSock = join(dir, "netagent.sock");
    const bSock = join(dir, "go.sock");
    const a = startServer(NETAGENT, ["--listen", `unix://${aSock}`, "--log-level", "warn"]);
    const b = startServer(go["ttrpc-server"], ["-socket", bSock]);
    try {
      await untilCheck(aSock, a);
      await untilCheck(bSock, b);
      await new Promise((r) => setTimeout(r, 2_000));
      rows.push([
        "idle RSS after 2 s (VmRSS)",
        `netagent ${(rssKiB(a.pid as number) / 1024).toFixed(1)} MiB; Go ttrpc server ${(rssKiB(b.pid as number) / 1024).toFixed(1)} MiB`,
      ]);
      for (const c of [1, 16]) {
        // Warm-up, not counted.
        goRate(go["ttrpc-client"], aSock, c);
        goRate(go["ttrpc-client"], bSock, c);
        const ra: number[] = [];
        const rb: number[] = [];
        for (let i = 0; i < PAIRS; i++) {
          if (i % 2 === 0) {
            ra.push(goRate(go["ttrpc-client"], aSock, c));
            rb.push(goRate(go["ttrpc-client"], bSock, c));
          } else {
            rb.push(goRate(go["ttrpc-client"], bSock, c));
            ra.push(goRate(go["ttrpc-client"], aSock, c));
          }
        }
        rows.push([
          `Check calls/s, Go client, concurrency ${c} (${PAIRS} pairs × ${CALLS} calls)`,
          comparison(ra, rb),
        ]);
      }
      // The same comparison with our own client (src/client/client.ts) in this process.
      for (const c of [1, 16]) {
        const ca = await AgentClient.connect(`unix://${aSock}`);
        const cb = await AgentClient.connect(`unix://${bSock}`);
        try {
          await tsRate(ca, c);
          await tsRate(cb, c);
          const ra: number[] = [];
          const rb: number[] = [];
          for (let i = 0; i < PAIRS; i++) {
            if (i % 2 === 0) {
              ra.push(await tsRate(ca, c));
              rb.push(await tsRate(cb, c));
            } else {
              rb.push(await tsRate(cb, c));
              ra.push(await tsRate(ca, c));
            }
          }
          rows.push([
            `Check calls/s, TS client (AgentClient), concurrency ${c} (${PAIRS} pairs × ${CALLS} calls)`,
            comparison(ra, rb),
          ]);
        } finally {
          ca.close();
          cb.close();
        }
      }
      rows.push([
        "RSS after the load",
        `netagent ${(rssKiB(a.pid as number) / 1024).toFixed(1)} MiB; Go ttrpc server ${(rssKiB(b.pid as number) / 1024).toFixed(1)} MiB`,
      ]);
    } finally {
      await stop(a);
      await stop(b);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const bun = execFileSync(join(ROOT, "node_modules/.bin/bun"), ["--version"], {
    encoding: "utf8",
  }).trim();
  const goVersion = execFileSync("go", ["version"], { encoding: "utf8" }).trim();
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; bun ${bun}; ${goVersion}; load average at the end ${load} (at the start ${loadAtStart})`,
  );
  console.log("command: node_modules/.bin/bun bench/ttrpc/bench.ts", args.join(" "));
  console.log("");
  console.log("| figure | value |");
  console.log("|---|---|");
  for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
}

await main();
