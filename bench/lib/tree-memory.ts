/**
 * Memory of a process and everything it started: PSS (proportional set
 * size: a page shared by k processes counts 1/k to each) and RSS, summed
 * over the tree from /proc/PID/smaps_rollup, and the tree's PIDs now.
 */
import { readFileSync } from "node:fs";
import { processName, processTree } from "../../test/helpers/process";

/** A field of /proc/PID/smaps_rollup in KiB (0 when the process is gone). */
export function rollupKiB(pid: number, field: "Pss" | "Rss"): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
      readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"),
    );
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

export interface TreeMemory {
  processes: number;
  pssKiB: number;
  rssKiB: number;
  /** By command name: processes and PSS. */
  byName: Record<string, { n: number; pssKiB: number }>;
}

/** PSS and RSS summed over the trees of `roots`. */
export function treeMemory(roots: number[]): TreeMemory {
  const out: TreeMemory = { processes: 0, pssKiB: 0, rssKiB: 0, byName: {} };
  for (const root of roots) {
    for (const p of processTree(root)) {
      const pss = rollupKiB(p, "Pss");
      out.processes++;
      out.pssKiB += pss;
      out.rssKiB += rollupKiB(p, "Rss");
      const name = processName(p) || "?";
      const e = out.byName[name] ?? { n: 0, pssKiB: 0 };
      e.n++;
      e.pssKiB += pss;
      out.byName[name] = e;
    }
  }
  return out;
}
