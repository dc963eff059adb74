/**
 * Row 5: exec of dist/netagent to its first answered Check, against the
 * runtime floor (dist/bench-floor: Bun-compiled, same socket, one fixed
 * answer). Both are direct children of this process, in its session,
 * started the same way; runs alternate A B / B A. The probe retries a fresh
 * connection every millisecond and sends a Check frame.
 *
 * Also gives row 6's reference: the floor's RSS once it has answered.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildFloor, NETAGENT, rssKiB, statusKiB, untilCheck } from "../lib/proc";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return;
  const exited = new Promise((r) => p.once("exit", r));
  process.kill(p.pid, "SIGKILL");
  await exited;
}

/** Starts `file --listen unix://sock`, waits for the first answered Check; ms and RSS then. */
async function startToCheck(file: string, sock: string, settleMs = 0) {
  const t0 = performance.now();
  const p = spawn(file, ["--listen", `unix://${sock}`], { stdio: "ignore" });
  try {
    await untilCheck(sock, () => p.exitCode === null && p.signalCode === null);
    const ms = performance.now() - t0;
    if (settleMs) await Bun.sleep(settleMs);
    const pid = p.pid as number;
    return {
      ms,
      rss: rssKiB(pid),
      anon: statusKiB(pid, "RssAnon"),
      file: statusKiB(pid, "RssFile"),
    };
  } finally {
    await stop(p);
  }
}

export async function coldStartRows(
  pairs: number,
): Promise<{ rows: Row[]; floorIdleKiB: number[]; floorSplit: string }> {
  const floor = buildFloor();
  const dir = mkdtempSync(join(tmpdir(), "netagent-bench-start-"));
  try {
    // Warm-up: page cache for both binaries.
    await startToCheck(NETAGENT, join(dir, "w-a.sock"));
    await startToCheck(floor, join(dir, "w-b.sock"));
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < pairs; i++) {
      const runA = async () => a.push((await startToCheck(NETAGENT, join(dir, `a${i}.sock`))).ms);
      const runB = async () => b.push((await startToCheck(floor, join(dir, `b${i}.sock`))).ms);
      if (i % 2 === 0) {
        await runA();
        await runB();
      } else {
        await runB();
        await runA();
      }
    }
    const floorIdleKiB: number[] = [];
    let floorSplit = "";
    for (let i = 0; i < 3; i++) {
      const r = await startToCheck(floor, join(dir, `idle${i}.sock`), 2000);
      floorIdleKiB.push(r.rss);
      floorSplit = `floor RssAnon ${(r.anon / 1024).toFixed(1)} MiB, RssFile ${(r.file / 1024).toFixed(1)} MiB`;
    }
    const ratios = a.map((x, i) => x / (b[i] as number));
    const r = median(ratios);
    return {
      floorIdleKiB,
      floorSplit,
      rows: [
        {
          id: "5",
          what: "cold start: exec -> first answered Check",
          unit: "ms",
          ours: median(a),
          reference: median(b),
          referenceWhat: "Bun-compiled floor",
          ratio: r,
          ratioNote: "median of per-pair ratios",
          oursStats: summarize(a),
          referenceStats: summarize(b),
          ratioStats: summarize(ratios),
          goal: "ratio <= 1.5",
          met: r <= 1.5,
          commands: [
            `bun bench/run.ts --rows 5 --pairs ${pairs}`,
            "by hand: dist/netagent --listen unix:///tmp/a.sock  vs  dist/bench-floor --listen unix:///tmp/b.sock, timing exec to the first Check answer (probe: 1 ms retry)",
            "floor build: bun build --compile --minify --sourcemap=none bench/floor/floor.ts --outfile dist/bench-floor",
          ],
        },
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
