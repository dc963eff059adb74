/**
 * Where an `ip` run writes its standard output: a file in a directory only
 * this process can enter, read once ip has exited. iproute2 flushes its
 * JSON every route or so, and a pipe hands those to the event loop a small
 * chunk at a time: a large table costs many times the CPU that the same
 * bytes read once from a file cost, and ip stalls on the full pipe
 * (bench/README.md, design figures). The guest's /tmp is a tmpfs.
 */
import { existsSync, lstatSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

let dir: string | undefined;
let exitHook = false;
let unavailable = false;
let seq = 0;

/**
 * A fresh path for one run's output, or undefined when no private
 * directory can be made (the caller reads a pipe instead). mkdtemp makes
 * the directory 0700, so no other user can plant a file or link there.
 */
export function outputPath(): string | undefined {
  if (unavailable) return undefined;
  // Made again when something removed it meanwhile (a /tmp cleaner).
  if (dir === undefined || !existsSync(dir)) {
    try {
      // Every directory is made after a sweep: at most one of a killed
      // process is left at a time, whoever makes the next one removes it.
      sweepDead(tmpdir());
      dir = mkdtempSync(join(tmpdir(), outputDirPrefix(process.pid)));
      if (!exitHook) {
        exitHook = true;
        process.once("exit", () => {
          if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
        });
      }
    } catch {
      unavailable = true;
      return undefined;
    }
  }
  seq = (seq + 1) % Number.MAX_SAFE_INTEGER;
  return join(dir, `${seq}.out`);
}

/** The private directory, once a run made it (tests check it is left empty). */
export function outputDir(): string | undefined {
  return dir;
}

/** The run's output, then the file is gone; "" when there is none. */
export async function takeOutput(path: string): Promise<string> {
  try {
    return await Bun.file(path).text();
  } catch {
    return "";
  } finally {
    dropOutput(path);
  }
}

/** Removes a run's output unread (a killed run's). */
export function dropOutput(path: string): void {
  rmSync(path, { force: true });
}

/**
 * The start of an output directory's name: netagent-ip-, the PID
 * namespace (a PID means nothing outside its own: a /tmp shared with a
 * container must not lose a live agent's directory), the PID.
 */
export function outputDirPrefix(pid: number): string {
  return `netagent-ip-${pidNamespace() ?? "unknown"}-${pid}-`;
}

/** This process's PID namespace (the inode of /proc/self/ns/pid), if it can be read. */
function pidNamespace(): string | undefined {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Removes the output directories of agents that are gone: one killed with
 * SIGKILL (init respawns it) cannot remove its own, and a guest that
 * kills and respawns its agent would gather them without end. Only
 * directories of this user, of this PID namespace, named for a PID that no
 * longer runs; never throws (a sweep that fails leaves them, as before).
 */
export function sweepDead(parent: string): void {
  const ns = pidNamespace();
  if (ns === undefined) return;
  const uid = process.getuid?.();
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  const ours = `netagent-ip-${ns}-`;
  for (const name of names) {
    if (!name.startsWith(ours)) continue;
    const pid = /^(\d+)-[^/]+$/.exec(name.slice(ours.length))?.[1];
    if (pid === undefined || Number(pid) === process.pid || running(Number(pid))) continue;
    const path = join(parent, name);
    try {
      const st = lstatSync(path);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
}

/** Whether a process with this PID exists (EPERM: it does, someone else's). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
