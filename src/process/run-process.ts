/**
 * One-shot runs: a process started, fed its stdin, read to its end and
 * reaped, always within a time limit. The result says why it stopped, and
 * each runner gives that its own meaning. Every runner maps the same stop
 * to the same status code:
 *
 * - `exited`: the runner reads the code and the words (a tool's own error
 *   table, src/net/parse/ip-errors.ts, iptables-errors.ts).
 * - `timed-out`, the process past its own limit: UNAVAILABLE. The caller's
 *   deadline did not pass (that would be `aborted`); the tool is wedged
 *   (an rtnl or xtables lock that never comes free) and a retry, later or
 *   once it is gone, may work. DEADLINE_EXCEEDED would tell the caller its
 *   own deadline passed, which the Kata runtime does not retry.
 * - `aborted`, the caller's signal: the code its reason carries
 *   (DEADLINE_EXCEEDED when the caller's deadline passed, CANCELLED when
 *   the caller went away, UNAVAILABLE when the agent shuts down).
 * - `output-cap`: RESOURCE_EXHAUSTED. `not-started`: INTERNAL, naming the program.
 *
 * Killing is SIGKILL by PID: none of these tools has clean-up worth waiting
 * for, and whoever asked reads the state again once the process is gone.
 */
import type { Command } from "./command";
import { type Child, startProcess } from "./start-process";

export interface RunOptions extends Command {
  /** Fed whole to standard input (Bun writes it while the process runs); none: no stdin. */
  stdin?: string | Uint8Array;
  /** Milliseconds before the process is killed: stop `timed-out`. */
  timeoutMs: number;
  /** The caller's signal: when it aborts the process is killed (stop `aborted`). */
  signal?: AbortSignal;
  /** Standard output kept, in bytes; past it the process is killed (stop `output-cap`). */
  maxOutputBytes?: number;
  /** Standard error kept, in bytes; the rest is read and dropped. */
  maxStderrBytes?: number;
  /**
   * Standard output goes to this file rather than a pipe (the result's
   * stdout is then empty; the caller reads the file). A file costs a
   * fraction of a pipe's CPU for large output (src/net/iproute/ip-stdout-file.ts).
   */
  stdoutFile?: string;
}

/** Why a process stopped. */
export type ProcessStop =
  /** It ended by itself: its exit status (128+N for signal N), and the signal if one ended it. */
  | { kind: "exited"; code: number; signal: NodeJS.Signals | null }
  /** Killed at its own time limit. */
  | { kind: "timed-out"; ms: number }
  /** The caller's signal; `started` false when it had aborted before the start. */
  | { kind: "aborted"; reason: unknown; started: boolean }
  /** Killed for printing more than `bytes`. */
  | { kind: "output-cap"; bytes: number }
  /** The program could not be executed (missing, not executable). */
  | { kind: "not-started"; error: Error };

export interface ProcessResult {
  stop: ProcessStop;
  /** Standard output (empty when it went to a file, or the process was killed). */
  stdout: Uint8Array;
  /** Standard error as text (empty when the process was killed). */
  stderr: string;
}

const EMPTY = new Uint8Array(0);

/** Runs `options.argv` to its end; never throws (a failure to start is a stop). */
export async function runProcess(options: RunOptions): Promise<ProcessResult> {
  const { signal, timeoutMs } = options;
  if (signal?.aborted) return stopped({ kind: "aborted", reason: signal.reason, started: false });
  const { argv, netns, env, stdin: input, stdoutFile } = options;
  let proc: Child<"ignore" | Uint8Array, "pipe" | { file: string }, "pipe">;
  try {
    proc = startProcess({
      argv,
      ...(netns === undefined ? {} : { netns }),
      ...(env === undefined ? {} : { env }),
      stdin:
        input === undefined ? "ignore" : typeof input === "string" ? Buffer.from(input) : input,
      stdout: stdoutFile === undefined ? "pipe" : { file: stdoutFile },
      stderr: "pipe",
    });
  } catch (err) {
    return stopped({
      kind: "not-started",
      error: err instanceof Error ? err : new Error(`${err}`),
    });
  }
  let stop: ProcessStop | undefined;
  // Reading ends when the process is killed: a child it left may hold the pipes.
  const cut = new AbortController();
  const kill = (why: ProcessStop) => {
    stop ??= why;
    proc.kill("SIGKILL");
    cut.abort();
  };
  const timer = setTimeout(() => kill({ kind: "timed-out", ms: timeoutMs }), timeoutMs);
  const onAbort = () =>
    kill({ kind: "aborted", reason: (signal as AbortSignal).reason, started: true });
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const maxOut = options.maxOutputBytes ?? Number.POSITIVE_INFINITY;
    const stdout =
      proc.stdout === undefined
        ? Promise.resolve(EMPTY)
        : readCapped(proc.stdout, maxOut, cut.signal, () =>
            kill({ kind: "output-cap", bytes: maxOut }),
          );
    const stderr = readCapped(
      proc.stderr,
      options.maxStderrBytes ?? Number.POSITIVE_INFINITY,
      cut.signal,
    );
    // Reaped: `exited` settles once the child is gone, not merely signalled.
    const exit = await proc.exited;
    if (stop === undefined) {
      const [out, err] = await Promise.all([stdout, stderr]);
      // Still under the timer: a child that exited but left its pipes held is cut at the limit.
      if (stop === undefined) {
        const exited: ProcessStop = { kind: "exited", ...exit };
        return { stop: exited, stdout: out, stderr: new TextDecoder().decode(err) };
      }
    }
    return stopped(stop);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    cut.abort();
  }
}

function stopped(stop: ProcessStop): ProcessResult {
  return { stop, stdout: EMPTY, stderr: "" };
}

/**
 * A stream read whole, up to `max` bytes kept: past it `over` is called
 * and reading ends, or without `over` the rest is read and dropped (a
 * child blocked on a full pipe would never end). Stopped, with what came
 * so far, when `cut` aborts.
 */
async function readCapped(
  stream: ReadableStream<Uint8Array>,
  max: number,
  cut: AbortSignal,
  over?: () => void,
): Promise<Uint8Array> {
  const reader = stream.getReader();
  const onCut = () => {
    reader.cancel().catch(() => {});
  };
  cut.addEventListener("abort", onCut, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || value === undefined) break;
      if (size + value.length > max) {
        if (size < max) chunks.push(value.subarray(0, max - size));
        size = max;
        if (over === undefined) continue;
        over();
        break;
      }
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // Cancelled, or the pipe failed: what came so far.
  } finally {
    cut.removeEventListener("abort", onCut);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
