/**
 * The agent leads its own process group, so that every process it starts
 * (which stays in its group) can be found by the next agent should this one
 * die mid-change (orphans.ts). Done once at start, before any child.
 *
 * Not when the agent runs in the foreground of a terminal: moved out of the
 * terminal's foreground group it would no longer get ^C. Then the record
 * names no group and a restart cannot wait for the processes left behind
 * (logged); the guest's init and service managers start it without a
 * terminal. The guest's init starts it through setsid (rootfs/init.sh):
 * under TCG the JIT is off and bun:ffi with it, so the agent could not make
 * the group itself there.
 */
import { dlopen, FFIType } from "bun:ffi";
import { closeSync, openSync } from "node:fs";
import { readProcStat } from "./proc-stat";

function libc() {
  return dlopen("libc.so.6", {
    getpgrp: { args: [], returns: FFIType.i32 },
    setpgid: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    tcgetpgrp: { args: [FFIType.i32], returns: FFIType.i32 },
  }).symbols;
}

/** The foreground group of this process's controlling terminal, if it has one. */
function terminalForeground(c: ReturnType<typeof libc>): number | undefined {
  let fd: number;
  try {
    // ENXIO when the process has no controlling terminal.
    fd = openSync("/dev/tty", "r");
  } catch {
    return undefined;
  }
  try {
    const pg = c.tcgetpgrp(fd);
    return pg > 0 ? pg : undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes this process the leader of a new process group unless it already
 * leads one or is in the foreground of a terminal. Answers the group it
 * leads (its PID), or undefined with the reason.
 */
export function leadProcessGroup(): { pgid: number } | { reason: string } {
  // Read without bun:ffi, which needs the JIT: started through setsid, the agent already leads one.
  if (readProcStat("self")?.pgrp === process.pid) return { pgid: process.pid };
  let c: ReturnType<typeof libc>;
  try {
    c = libc();
  } catch (err) {
    return { reason: `libc: ${(err as Error).message}` };
  }
  const pgrp = c.getpgrp();
  if (pgrp === process.pid) return { pgid: pgrp };
  if (terminalForeground(c) === pgrp) return { reason: "in the foreground of a terminal" };
  if (c.setpgid(0, 0) !== 0) return { reason: "setpgid failed" };
  return { pgid: process.pid };
}
