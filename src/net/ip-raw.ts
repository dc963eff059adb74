/**
 * One-shot `ip` runs whose output is handed on as iproute2 printed it: the
 * complete read's listings and the route lookups (netagent.v1.Network Read
 * and RouteGet; the host's pod side runs the same). They run as the
 * runner's own runs do: its binary and namespace, its process slots (the
 * agent's bound on `ip` processes), its time limit, output through a file,
 * killed when the call is cancelled. (To move into IpRunner once its
 * split lands; until then this reads only its public fields.)
 */
import { runProcess } from "../process/run-process";
import { classifyIpError, ipErrorText } from "./ip-errors";
import { dropOutput, outputPath, takeOutput } from "./ip-output";
import { cancelled, killedAfter } from "./ip-resident";
import type { IpRunner } from "./ip-runner";
import { NetError } from "./net-error";

export interface RawRun {
  /** Exit status (0 success). */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `ip ARGS` (fed `stdin`) as `runner` runs it; throws a NetError when ip
 * could not run to its end (not started: internal; past its limit:
 * unavailable; cancelled: aborted). A non-zero exit is the caller's.
 */
export async function runIpRaw(
  runner: IpRunner,
  args: readonly string[],
  opts: { stdin?: string; signal?: AbortSignal } = {},
): Promise<RawRun> {
  const run = () => spawn(runner, args, opts);
  return runner.slots ? runner.slots.run(run) : run();
}

async function spawn(
  runner: IpRunner,
  args: readonly string[],
  opts: { stdin?: string; signal?: AbortSignal },
): Promise<RawRun> {
  const { netns, binary } = runner;
  const command =
    netns === undefined
      ? { argv: [binary, ...args] }
      : netns.startsWith("/")
        ? { argv: [binary, ...args], netns }
        : { argv: [binary, "-n", netns, ...args] };
  const lines = opts.stdin === undefined ? 0 : opts.stdin.split("\n").length - 1;
  const outFile = outputPath();
  const r = await runProcess({
    ...command,
    ...(opts.stdin === undefined ? {} : { stdin: opts.stdin }),
    timeoutMs: runner.timeoutFor(lines),
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(outFile === undefined ? {} : { stdoutFile: outFile }),
  });
  const { stop } = r;
  if (stop.kind !== "exited") {
    if (outFile !== undefined) dropOutput(outFile);
    switch (stop.kind) {
      case "not-started":
        throw new NetError("internal", `cannot run ${binary}: ${stop.error.message}`);
      case "aborted":
        throw cancelled(
          opts.signal as AbortSignal,
          stop.started ? "killed (SIGKILL)" : "not started",
        );
      case "timed-out":
        throw killedAfter(stop.ms);
      case "output-cap":
        throw new NetError("internal", "ip runs have no output cap");
    }
  }
  const stdout =
    outFile === undefined ? new TextDecoder().decode(r.stdout) : await takeOutput(outFile);
  return { code: stop.code, stdout, stderr: r.stderr };
}

/** A failed run as the error the caller throws: the command and iproute2's words. */
export function rawRunError(args: readonly string[], r: RawRun): NetError {
  return new NetError(classifyIpError(r.stderr), `ip ${args.join(" ")}: ${ipErrorText(r.stderr)}`);
}
