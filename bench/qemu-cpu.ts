/**
 * The CPU time a process (QEMU) has used. On a loaded host a TCG guest's
 * clock runs on while its QEMU waits for a core, and its CPU time does
 * not: the boot benches report both.
 */
import { readFileSync } from "node:fs";

/** User + system CPU time of process `pid`, in ms (/proc/PID/stat, 10 ms steps). */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return 10 * (Number(fields[11]) + Number(fields[12]));
}
