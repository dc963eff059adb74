/**
 * Where an `ip` run writes its standard output: a file in a directory only
 * this process can enter, read once ip has exited. iproute2 flushes its
 * JSON every route or so, and a pipe hands those to the event loop one
 * ~1 KiB chunk at a time: reading a 10,000-route table that way cost ~50 ms
 * of CPU (and more wall time, ip stalling on the full pipe) against ~4 ms
 * for the same bytes from a file. The guest's /tmp is a tmpfs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
      dir = mkdtempSync(join(tmpdir(), "netagent-ip-"));
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
