/**
 * A process's CPU time from the scheduler's own count
 * (/proc/PID/task/TID/schedstat, nanoseconds, every thread): on a shared,
 * loaded machine the CPU a call costs varies far less than its wall time.
 */
import { readdirSync, readFileSync } from "node:fs";

/** CPU time of all of `pid`'s live threads so far, in ns (not its children's). */
export function threadsCpuNs(pid: number): number {
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
