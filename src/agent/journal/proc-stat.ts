/**
 * What /proc says about processes, the boot and this network namespace:
 * enough to know a change record's writer and the processes it left.
 * Reads only; each returns undefined (or a placeholder) where /proc lacks it.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";

export interface ProcStat {
  pid: number;
  /** The executable's name as the kernel keeps it (at most 15 bytes). */
  comm: string;
  /** R, S, D, Z (a zombie: it has ended, nobody reaped it yet), ... */
  state: string;
  pgrp: number;
  /** Start time in clock ticks since boot: with the PID, a process's identity. */
  start: number;
}

/** /proc/PID/stat of one process, or undefined when it is gone. */
export function readProcStat(pid: number | "self"): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // comm is in parentheses and may hold spaces or ')': the fields follow the last ')'.
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const f = text.slice(close + 2).split(" ");
  // After comm: state(3) ppid(4) pgrp(5) ... starttime(22).
  return {
    pid: Number(text.slice(0, open - 1)),
    comm: text.slice(open + 1, close),
    state: f[0] ?? "",
    pgrp: Number(f[2]),
    start: Number(f[19]),
  };
}

/** Every process in process group `pgrp`, as /proc lists them now. */
export function processesInGroup(pgrp: number): ProcStat[] {
  const found: ProcStat[] = [];
  for (const name of readdirSync("/proc")) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    const s = readProcStat(Number(name));
    if (s && s.pgrp === pgrp) found.push(s);
  }
  return found;
}

/** True while `pid` is still the process that started at `start` and has not ended. */
export function stillRunning(pid: number, start: number): boolean {
  const s = readProcStat(pid);
  return s !== undefined && s.start === start && s.state !== "Z" && s.state !== "X";
}

/** This boot's identity; "unknown" where the kernel does not say (never equal to a real one). */
export function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "latin1").trim();
  } catch {
    return "unknown";
  }
}

/** This process's network namespace, as device:inode of /proc/self/ns/net. */
export function netnsId(): string {
  try {
    const s = statSync("/proc/self/ns/net");
    return `${s.dev}:${s.ino}`;
  } catch {
    return "unknown";
  }
}
