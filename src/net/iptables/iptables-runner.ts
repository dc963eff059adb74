/**
 * IptablesRunner: runs the iptables tools (iptables-save/-restore,
 * ip6tables-save/-restore) through src/process, the rules on stdin, and
 * says what their ends mean. Bounded: input and output are capped at
 * {@link MAX_RULES_BYTES}, every process has a time limit
 * ({@link DEFAULT_TIMEOUT_MS}) and is killed on the call's abort signal; a
 * killed or stuck process is reported as such.
 */
import { runProcess } from "../../process/run-process";
import { NetError, type NetErrorKind } from "../model/net-error";
import { classifyRestoreError, type RestoreFailure, restoreFailure } from "./iptables-errors";

/**
 * The largest rules text taken in or given out (bytes). A ttRPC frame is at
 * most 4 MiB, so an answer past this could not be sent anyway; a pod's
 * namespace holds far less (an Istio sidecar's rules are ~3 KiB).
 */
export const MAX_RULES_BYTES = 3 * 1024 * 1024;
/** How long one tool may run before it is killed (then UNAVAILABLE: src/process/run-process.ts). */
const DEFAULT_TIMEOUT_MS = 30_000;
/** The most of a tool's stderr kept (errors quote at most MAX_WORDS of it). */
const MAX_STDERR_BYTES = 64 * 1024;

type Tool = "save" | "restore";
export type IpFamily = 4 | 6;

/** The executable for a tool and family: iptables-save ... ip6tables-restore. */
function toolName(tool: Tool, family: IpFamily): string {
  return `${family === 6 ? "ip6tables" : "iptables"}-${tool}`;
}

/** A restore the tool refused: its line number (1-based, when it gave one) and its words. */
export class RestoreError extends NetError {
  constructor(
    readonly tool: string,
    readonly failure: RestoreFailure,
    kind: NetErrorKind,
  ) {
    const { line, words } = failure;
    const where = line === undefined || words.includes(`line ${line}`) ? "" : `line ${line}: `;
    super(kind, `${tool}: ${where}${words}`);
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
  exitCode: number;
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
      throw new NetError(classifyRestoreError(r.stderr), `${name}: ${msg}`);
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
      throw new NetError(
        "exhausted",
        `${name}: input of ${data.length} bytes is over the limit of ${this.maxBytes}`,
      );
    }
    const args = [...(opts.test ? ["--test"] : []), ...(opts.counters ? ["-c"] : [])];
    const r = await this.run(name, args, data, opts.signal);
    if (r.exitCode === 0) return r.stdout;
    const failure = restoreFailure(r.stderr, r.exitCode);
    throw new RestoreError(name, failure, classifyRestoreError(r.stderr));
  }

  private async run(
    name: string,
    args: string[],
    stdin: Uint8Array | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RunResult> {
    const bin = this.options.binaries?.[name] ?? name;
    const { netns } = this.options;
    const r = await runProcess({
      argv: [bin, ...args],
      ...(netns === undefined ? {} : { netns }),
      ...(stdin === undefined ? {} : { stdin }),
      timeoutMs: this.timeoutMs,
      ...(signal ? { signal } : {}),
      maxOutputBytes: this.maxBytes,
      maxStderrBytes: MAX_STDERR_BYTES,
    });
    const { stop } = r;
    switch (stop.kind) {
      case "not-started":
        throw new NetError("internal", `cannot run ${name}: ${stop.error.message}`, {
          cause: stop.error,
        });
      case "timed-out":
        throw new NetError(
          "unavailable",
          `${name} did not finish within ${stop.ms} ms and was killed`,
        );
      case "aborted":
        throw abortError(name, stop.reason);
      case "output-cap":
        throw new NetError(
          "exhausted",
          `${name} printed more than ${stop.bytes} bytes and was stopped`,
        );
    }
    // A process killed by a signal leaves no words of its own: say so.
    if (stop.signal && !r.stderr.trim()) {
      throw new NetError("internal", `${name} was killed by ${stop.signal} before it finished`);
    }
    return { stdout: r.stdout, stderr: r.stderr, exitCode: stop.code };
  }
}

/** The caller's signal ended the tool: aborted, the signal's reason as its cause. */
function abortError(name: string, reason: unknown): NetError {
  const timeout = (reason as Error | undefined)?.name === "TimeoutError";
  const what = timeout ? "past its deadline" : "cancelled";
  return new NetError("aborted", `${name} stopped: the call was ${what}`, { cause: reason });
}
