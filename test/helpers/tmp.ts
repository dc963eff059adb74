/** Temporary directories for sockets, removed by the returned cleanup. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TempDir {
  path: string;
  /** A path inside the directory. */
  join(name: string): string;
  remove(): void;
}

export function tempDir(prefix = "netagent-test-"): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    join: (name) => join(path, name),
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}
