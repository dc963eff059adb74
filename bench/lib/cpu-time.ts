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

/**
 * CPU time of `pid`'s main thread alone, in ns: the JavaScript that runs
 * the calls, without the JIT compiler, collector and allocator threads
 * beside it (whose share varies from run to run far more).
 */
export function mainThreadCpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]);
}
