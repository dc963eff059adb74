/**
 * Cold start of two binaries (exec -> first answered Check), interleaved
 * A B / B A: e.g. the agent against a build with other flags.
 *
 *   bun bench/profile/compare-start.ts --a BINARY --b BINARY [--pairs 15]
 */
import { spawn } from "node:child_process";
import { tempDir } from "../../test/helpers/tmp";
import { option } from "../lib/args";
import { untilCheck } from "../lib/proc";
import { median } from "../lib/stats";

const opt = option;
const bins = { a: opt("--a"), b: opt("--b") };
const pairs = Number(opt("--pairs", "15"));
const dir = tempDir("netagent-start-");

async function once(bin: string, sock: string): Promise<number> {
  const t0 = performance.now();
  const p = spawn(bin, ["--listen", `unix://${sock}`], { stdio: "ignore" });
  try {
    await untilCheck(sock, () => p.exitCode === null && p.signalCode === null);
    return performance.now() - t0;
  } finally {
    const exited = new Promise((r) => p.once("exit", r));
    if (p.pid !== undefined && p.exitCode === null) process.kill(p.pid, "SIGKILL");
    await exited;
  }
}

try {
  const t = { a: [] as number[], b: [] as number[] };
  await once(bins.a, dir.join("wa.sock"));
  await once(bins.b, dir.join("wb.sock"));
  for (let i = 0; i < pairs; i++) {
    for (const k of i % 2 === 0 ? (["a", "b"] as const) : (["b", "a"] as const)) {
      t[k].push(await once(bins[k], dir.join(`${k}${i}.sock`)));
    }
  }
  const ratios = t.b.map((v, i) => v / (t.a[i] as number));
  console.log(
    `a ${median(t.a).toFixed(1)} ms, b ${median(t.b).toFixed(1)} ms, b/a per-pair median ${median(ratios).toFixed(2)} (min ${Math.min(...ratios).toFixed(2)}, max ${Math.max(...ratios).toFixed(2)})`,
  );
} finally {
  dir.remove();
}
