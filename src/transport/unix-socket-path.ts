/**
 * Putting a listening unix socket at its path without the races of
 * lstat → unlink → bind → chmod: the socket is bound in a fresh private
 * directory (mode 0700, beside the target so it is the same filesystem),
 * given mode 0600 there, where nobody else can reach or swap it, and then
 * linked into place in one step. link(2) never follows a symlink and fails
 * if anything appeared at the path meanwhile; an existing socket is
 * replaced (rename(2), atomic) only when nothing answers on it.
 */
import { linkSync, lstatSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";

/** Why the socket cannot go at its path: main exits 2 with this message. */
export class SocketPathError extends Error {
  override readonly name = "SocketPathError";
}

/** How long a connect to an existing socket may take before it counts as live. */
const PROBE_TIMEOUT_MS = 2000;

/** A private directory beside `path` to bind in; `remove()` deletes it and what is left in it. */
export function stageUnixSocket(path: string): { path: string; remove(): void } {
  // Short names: a unix socket path has room for 107 bytes, and the staged
  // one is only two bytes longer than `path` with a 10-byte name (agent.sock).
  const dir = mkdtempSync(join(dirname(path), ".na-"));
  return { path: join(dir, "s"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * What answers at an existing socket file: "live" (a connect succeeded, or
 * did not fail in time: a busy listener), "stale" (refused: nobody listens),
 * "gone" (removed meanwhile), else the errno code (e.g. EACCES).
 */
async function probeUnixSocket(path: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<string> {
  // Loaded here, not at the top: node:net (and node:stream behind it) is
  // Bun's own JavaScript, compiled when first imported, and an agent that
  // listens on vsock or a serial port never probes a socket path; under
  // TCG that import is a measurable part of the start (bench/README.md).
  const { createConnection } = await import("node:net");
  return new Promise((resolve) => {
    const socket = createConnection(path);
    const done = (state: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(state);
    };
    const timer = setTimeout(() => done("live"), timeoutMs);
    socket.once("connect", () => done("live"));
    socket.once("error", (err: NodeJS.ErrnoException) =>
      done(
        err.code === "ECONNREFUSED" ? "stale" : err.code === "ENOENT" ? "gone" : String(err.code),
      ),
    );
  });
}

/**
 * Puts the listening socket `staged` at `path`. Throws SocketPathError when
 * `path` is something else than a socket (a symlink included), when a
 * process answers on the socket there, or when that cannot be told.
 */
export async function publishUnixSocket(staged: string, path: string): Promise<void> {
  // A few rounds: the file at `path` may vanish between our steps.
  for (let round = 0; round < 3; round++) {
    try {
      linkSync(staged, path);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let isSocket: boolean;
    try {
      isSocket = lstatSync(path).isSocket();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw err;
    }
    if (!isSocket) throw new SocketPathError(`${path} exists and is not a socket`);
    const state = await probeUnixSocket(path);
    if (state === "gone") continue;
    if (state === "live") {
      throw new SocketPathError(
        `${path}: another process is listening on this socket (a running agent?); not replacing it`,
      );
    }
    if (state !== "stale") {
      throw new SocketPathError(`${path}: cannot tell whether the socket is in use (${state})`);
    }
    // Stale: left by an agent that died. rename replaces it in one step.
    renameSync(staged, path);
    return;
  }
  throw new SocketPathError(`${path}: keeps changing while the agent tries to listen on it`);
}
