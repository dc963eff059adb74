/**
 * Rows 1-2 come from bench/ttrpc/bench.ts (owned by the ttRPC work): run as
 * a child, its markdown table taken over. A "Check calls/s" figure of the
 * form "netagent X; Go server Y; ratio R (per-pair ratios a–b)" becomes a
 * numeric row (higher is better there: ratio = ours / Go, goal >= 1.0);
 * any other figure is kept as text.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { BUN, ROOT } from "../lib/proc";
import type { Row } from "../lib/row";

export const TTRPC_BENCH = join(ROOT, "bench/ttrpc/bench.ts");

export function ttrpcRows(extraArgs: string[]): Row[] {
  if (!existsSync(TTRPC_BENCH)) return [];
  const cmd = `bun bench/ttrpc/bench.ts ${extraArgs.join(" ")}`.trim();
  const r = spawnSync(BUN, [TTRPC_BENCH, ...extraArgs], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 600_000,
  });
  if (r.status !== 0) {
    return [
      {
        id: "1-2",
        what: "bench/ttrpc/bench.ts failed",
        unit: "",
        ours: Number.NaN,
        text: `exit ${r.status ?? r.signal}`,
        commands: [cmd],
      },
    ];
  }
  const rows: Row[] = [];
  for (const line of r.stdout.split("\n")) {
    const cells = /^\|\s*(.+?)\s*\|\s*(.+?)\s*\|$/.exec(line);
    if (!cells || cells[1] === "figure" || cells[1]?.startsWith("---")) continue;
    const what = cells[1] as string;
    const value = cells[2] as string;
    const m =
      /netagent ([\d.]+); Go server ([\d.]+); ratio ([\d.]+) \(per-pair ratios ([\d.]+)[–-]([\d.]+)\)/.exec(
        value,
      );
    if (m) {
      const ratio = Number(m[3]);
      rows.push({
        id: /TS client|netagent client/i.test(what) ? "2" : "1",
        what,
        unit: "calls/s",
        ours: Number(m[1]),
        reference: Number(m[2]),
        referenceWhat: "Go ttrpc server",
        ratio,
        ratioNote: "ours / Go (throughput: higher is better)",
        ratioStats: { n: Number.NaN, min: Number(m[4]), median: ratio, max: Number(m[5]) },
        goal: "ratio >= 1.0",
        met: ratio >= 1.0,
        commands: [cmd],
      });
    } else {
      rows.push({ id: "1-2", what, unit: "", ours: Number.NaN, text: value, commands: [cmd] });
    }
  }
  return rows;
}
