/**
 * IptablesRunner: the only place that spawns the iptables tools
 * (iptables-save/-restore, ip6tables-save/-restore). Like IpRunner: no
 * shell, the rules on stdin, a fixed environment. Bounded: input and output
 * are capped at {@link MAX_RULES_BYTES}, every process has a deadline
 * ({@link DEFAULT_TIMEOUT_MS}, or the call's when sooner) and is killed on
 * the call's abort signal; a killed or stuck process is reported as such.
 */
import { Code, TtrpcError } from "../ttrpc/codes";
import { classifyRestoreError, type RestoreFailure, restoreFailure } from "./iptables-errors";

/**
 * The largest rules text taken in or given out (bytes). A ttRPC frame is at
 * most 4 MiB, so an answer past this could not be sent anyway; a pod's
 * namespace holds far less (an Istio sidecar's rules are ~3 KiB).
 */
export const MAX_RULES_BYTES = 3 * 1024 * 1024;
/** How long one tool may run before it is killed. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export type Tool = "save" | "restore";
export type IpFamily = 4 | 6;

/** The executable for a tool and family: iptables-save ... ip6tables-restore. */
export function toolName(tool: Tool, family: IpFamily): string {
  return `${family === 6 ? "ip6tables" : "iptables"}-${tool}`;
}

/** A restore the tool refused: its line number (1-based, when it gave one) and its words. */
export class RestoreError extends TtrpcError {
  constructor(
    readonly tool: string,
    readonly failure: RestoreFailure,
    code: Code,
  ) {
    const { line, words } = failure;
    const where = line === undefined || words.includes(`line ${line}`) ? "" : `line ${line}: `;
    super(`${tool}: ${where}${words}`, code);
  }
}

export interface IptablesRunnerOptions {
  /** Executables by their usual name (for stand-ins in tests); default: the name on PATH. */
  binaries?: Partial<Record<string, string>>;
  /** A name under /run/netns or a path (/proc/PID/ns/net): run inside it with nsenter. */
  netns?: string;
  timeoutMs?: number;
  maxBytes?: number;
}

interface RunResult {
  stdout: Uint8Array;
  stderr: string;
  exitCode: number | null;
}

export class IptablesRunner {
  readonly timeoutMs: number;
  readonly maxBytes: number;

  constructor(readonly options: IptablesRunnerOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxBytes = options.maxBytes ?? MAX_RULES_BYTES;
  }

  /**
   * What `iptables-save` prints (with `tables`, only those: one `-t` per
   * process, so several tables are several runs). `counters` adds `-c`.
   * RESOURCE_EXHAUSTED past the output cap.
   */
  async save(
    family: IpFamily,
    opts: { table?: string; counters?: boolean; signal?: AbortSignal } = {},
  ): Promise<Uint8Array> {
    const args = [
      ...(opts.counters ? ["-c"] : []),
      ...(opts.table === undefined ? [] : ["-t", opts.table]),
    ];
    const name = toolName("save", family);
    const r = await this.run(name, args, undefined, opts.signal);
    if (r.exitCode !== 0) {
      const msg = r.stderr.trim().split("\n")[0] || `${name} exited with ${r.exitCode}`;
      throw new TtrpcError(`${name}: ${msg}`, classifyRestoreError(r.stderr));
    }
    return r.stdout;
  }

  /**
   * Feeds `data` to `iptables-restore` (tables named in it are replaced,
   * each atomically; tables before a failing one stay committed). `test`
   * parses and checks without committing (`--test`); `counters` restores
   * the `[packets:bytes]` given (`-c`). Returns what the tool printed;
   * throws RestoreError with the tool's line number and words.
   */
  async restore(
    family: IpFamily,
    data: Uint8Array,
    opts: { test?: boolean; counters?: boolean; signal?: AbortSignal } = {},
  ): Promise<Uint8Array> {
    const name = toolName("restore", family);
    if (data.length > this.maxBytes) {
      throw new TtrpcError(
        `${name}: input of ${data.length} bytes is over the limit of ${this.maxBytes}`,
        Code.RESOURCE_EXHAUSTED,
      );
    }
    const args = [...(opts.test ? ["--test"] : []), ...(opts.counters ? ["-c"] : [])];
    const r = await this.run(name, args, data, opts.signal);
    if (r.exitCode === 0) return r.stdout;
    const failure = restoreFailure(r.stderr, r.exitCode);
    throw new RestoreError(name, failure, classifyRestoreError(r.stderr));
  }

  private argv(name: string, args: string[]): string[] {
    const bin = this.options.binaries?.[name] ?? name;
    const { netns } = this.options;
    if (netns === undefined) return [bin, ...args];
    const path = netns.startsWith("/") ? netns : `/run/netns/${netns}`;
    return ["nsenter", `--net=${path}`, "--", bin, ...args];
  }

  private async run(
    name: string,
    args: string[],
    stdin: Uint8Array | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RunResult> {
    if (signal?.aborted) throw abortError(name, signal);
    let proc: Bun.Subprocess<"pipe" | "ignore", "pipe", "pipe">;
    try {
      proc = Bun.spawn(this.argv(name, args), {
        stdin: stdin === undefined ? "ignore" : "pipe",
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
      });
    } catch (err) {
      throw new TtrpcError(`cannot run ${name}: ${(err as Error).message}`, Code.INTERNAL, {
        cause: err,
      });
    }
    let why: "timeout" | "abort" | "overflow" | undefined;
    const kill = (reason: typeof why) => {
      why ??= reason;
      proc.kill("SIGKILL");
    };
    const timer = setTimeout(() => kill("timeout"), this.timeoutMs);
    const onAbort = () => kill("abort");
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      if (stdin !== undefined && typeof proc.stdin === "object") {
        // A tool that exits early (a parse error) closes its end: that is
        // its answer, not ours to report.
        try {
          proc.stdin.write(stdin);
          await proc.stdin.end();
        } catch {}
      }
      const [stdout, stderr, exitCode] = await Promise.all([
        readCapped(proc.stdout, this.maxBytes, () => kill("overflow")),
        readCapped(proc.stderr, 64 * 1024),
        proc.exited,
      ]);
      if (why === "timeout") {
        throw new TtrpcError(
          `${name} did not finish within ${this.timeoutMs} ms and was killed`,
          Code.DEADLINE_EXCEEDED,
        );
      }
      if (why === "abort") throw abortError(name, signal as AbortSignal);
      if (why === "overflow") {
        throw new TtrpcError(
          `${name} printed more than ${this.maxBytes} bytes and was stopped`,
          Code.RESOURCE_EXHAUSTED,
        );
      }
      const text = new TextDecoder().decode(stderr);
      // A process killed by a signal leaves no words of its own: say so.
      if (proc.signalCode && !text.trim()) {
        throw new TtrpcError(
          `${name} was killed by ${proc.signalCode} before it finished`,
          Code.INTERNAL,
        );
      }
      return { stdout, stderr: text, exitCode };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

function abortError(name: string, signal: AbortSignal): TtrpcError {
  const timeout = (signal.reason as Error | undefined)?.name === "TimeoutError";
  return new TtrpcError(
    `${name} stopped: the call was ${timeout ? "past its deadline" : "cancelled"}`,
    timeout ? Code.DEADLINE_EXCEEDED : Code.CANCELLED,
  );
}

/** Reads a stream whole, up to `max` bytes; past it calls `over` and keeps only `max`. */
async function readCapped(
  stream: ReadableStream<Uint8Array>,
  max: number,
  over?: () => void,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size + chunk.length > max) {
      chunks.push(chunk.subarray(0, max - size));
      size = max;
      over?.();
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
