/**
 * Where an `ip` run writes its standard output: a file in a directory only
 * this process can enter, read once ip has exited. iproute2 flushes its
 * JSON every route or so, and a pipe hands those to the event loop one
 * ~1 KiB chunk at a time: reading a 10,000-route table that way cost ~50 ms
 * of CPU (and more wall time, ip stalling on the full pipe) against ~4 ms
 * for the same bytes from a file. The guest's /tmp is a tmpfs.
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The directory's name: the prefix, the agent's PID, mkdtemp's suffix. */
const PREFIX = "netagent-ip-";

let dir: string | undefined;
let unavailable = false;
let seq = 0;

/**
 * A fresh path for one run's output, or undefined when no private
 * directory can be made (the caller reads a pipe instead). mkdtemp makes
 * the directory 0700, so no other user can plant a file or link there.
 */
export function outputPath(): string | undefined {
  if (unavailable) return undefined;
  if (dir === undefined) {
    try {
      sweepDead(tmpdir());
      dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
      process.once("exit", () => rmSync(dir as string, { recursive: true, force: true }));
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

/** sweepDead of the temporary directory: the agent does it as it starts. */
export function sweepDeadOutputs(): void {
  sweepDead(tmpdir());
}

/**
 * Removes the output directories of agents that are gone: one killed with
 * SIGKILL (init respawns it) cannot remove its own, and a guest that
 * kills and respawns its agent would gather them without end. Only
 * directories of this user named for a PID that no longer runs; never
 * throws (a sweep that fails leaves them, as before).
 */
export function sweepDead(parent: string): void {
  const uid = process.getuid?.();
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^netagent-ip-(\d+)-[^/]+$/.exec(name)?.[1];
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
