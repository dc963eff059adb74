/**
 * One-shot `ip` processes: `ip ARGS` in the runner's namespace, started by
 * src/process, its standard output to a private file (ip-stdout-file.ts), its
 * time limit grown with the lines it is fed, at most as many at once as the
 * slots allow. What a run's end means comes back as a RunResult: iproute2's
 * words for the caller to read, or why it was killed.
 */
import type { Command } from "../../process/command";
import { type ProcessStop, runProcess } from "../../process/run-process";
import { NetError } from "../model/net-error";
import { cancelled, killedAfter, type RunResult } from "./ip-resident";
import { dropOutput, outputPath, takeOutput } from "./ip-stdout-file";
import type { Semaphore } from "./semaphore";

/**
 * How long one `ip` may run before it is killed (SIGKILL): `timeoutMs`, plus
 * `perLineMs` for each line it is fed. A wedged iproute2 (an rtnl lock that
 * never comes free) would otherwise hold the write queue for ever. Both
 * are many times what the largest read and batch take on a slow (TCG)
 * guest (bench/README.md, design figures).
 */
export interface IpLimits {
  timeoutMs: number;
  perLineMs: number;
}

export const DEFAULT_IP_LIMITS: Readonly<IpLimits> = { timeoutMs: 60_000, perLineMs: 1 };

export interface IpOneShotOptions {
  /** The executable (the agent's `--ip-bin` may name a stand-in); default `ip`. */
  binary?: string;
  /** A name under /run/netns, or a path (e.g. /proc/PID/ns/net). */
  netns?: string;
  limits?: Readonly<IpLimits>;
  /** Bounds the `ip` processes running at once (the agent passes one; the host does not). */
  slots?: Semaphore;
}

export class IpOneShot {
  readonly binary: string;
  readonly netns: string | undefined;
  readonly limits: Readonly<IpLimits>;
  private readonly slots: Semaphore | undefined;

  constructor(options: IpOneShotOptions = {}) {
    this.binary = options.binary ?? "ip";
    this.netns = options.netns;
    this.limits = options.limits ?? DEFAULT_IP_LIMITS;
    this.slots = options.slots;
  }

  /** How long a run fed `lines` lines may take before it is killed. */
  timeoutFor(lines: number): number {
    return this.limits.timeoutMs + this.limits.perLineMs * lines;
  }

  /**
   * `ip ARGS` fed `stdin`, in a slot when there are slots. A run the caller's
   * signal ended (also while it waited for a slot: it never starts) or that
   * passed its limit comes back `killed`; one that cannot start throws.
   */
  run(args: string[], stdin?: string, signal?: AbortSignal): Promise<RunResult> {
    return this.slots
      ? this.slots.run(() => this.spawn(args, stdin, signal))
      : this.spawn(args, stdin, signal);
  }

  private async spawn(args: string[], stdin?: string, signal?: AbortSignal): Promise<RunResult> {
    // Output to a file, not a pipe (ip-stdout-file.ts says why).
    const outFile = outputPath();
    const r = await runProcess({
      ...this.command(args),
      ...(stdin === undefined ? {} : { stdin }),
      timeoutMs: this.timeoutFor(stdin === undefined ? 0 : countLines(stdin)),
      ...(signal ? { signal } : {}),
      ...(outFile === undefined ? {} : { stdoutFile: outFile }),
    });
    const { stop } = r;
    if (stop.kind !== "exited") {
      if (outFile !== undefined) dropOutput(outFile);
      if (stop.kind === "not-started") {
        throw new NetError("internal", `cannot run ${this.binary}: ${stop.error.message}`, {
          cause: stop.error,
        });
      }
      return { stdout: "", stderr: "", exitCode: -1, killed: killedBy(stop, signal) };
    }
    const out =
      outFile === undefined ? new TextDecoder().decode(r.stdout) : await takeOutput(outFile);
    // A process killed by a signal leaves no words of its own: say so.
    const died =
      stop.signal && !r.stderr.trim() ? `ip was killed by ${stop.signal} before it finished` : "";
    return { stdout: out, stderr: r.stderr || died, exitCode: stop.code };
  }

  /**
   * `ip ARGS` in the namespace: a name by iproute2's own `-n` (no extra
   * exec), a path through nsenter (iproute2 6.1's `-n` takes names only).
   */
  private command(args: string[]): Command {
    const { netns } = this;
    if (netns === undefined) return { argv: [this.binary, ...args] };
    return netns.startsWith("/")
      ? { argv: [this.binary, ...args], netns }
      : { argv: [this.binary, "-n", netns, ...args] };
  }
}

/** Why a run that did not end by itself failed (ip runs are given no output cap). */
function killedBy(
  stop: Exclude<ProcessStop, { kind: "exited" | "not-started" }>,
  signal?: AbortSignal,
): NetError {
  switch (stop.kind) {
    case "aborted":
      // Also when the call was cancelled while waiting for a process slot.
      return cancelled(signal as AbortSignal, stop.started ? "killed (SIGKILL)" : "not started");
    case "timed-out":
      return killedAfter(stop.ms);
    case "output-cap":
      return new NetError("exhausted", `printed more than ${stop.bytes} bytes`);
  }
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}
