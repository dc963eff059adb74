/**
 * One-shot `ip` runs whose output is handed on as iproute2 printed it: the
 * complete read's listings and the route lookups (netagent.v1.Network Read
 * and RouteGet; the host's pod side runs the same). They are the runner's
 * own one-shot runs (IpRunner.runOnce): its binary and namespace, its
 * process slots (the agent's bound on `ip` processes), its time limit,
 * output through a file, killed when the call is cancelled.
 */

import { NetError } from "../model/net-error";
import { classifyIpError, ipErrorText } from "../parse/ip-errors";
import type { RunResult } from "./ip-resident";
import type { IpRunner } from "./ip-runner";

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
  return raw(await runner.runOnce([...args], opts));
}

/** A failed run as the error the caller throws: the command and iproute2's words. */
export function rawRunError(args: readonly string[], r: RawRun): NetError {
  return new NetError(classifyIpError(r.stderr), `ip ${args.join(" ")}: ${ipErrorText(r.stderr)}`);
}

/**
 * Show lines as `ip [-6] -d -j -batch -` prints them, through the runner's
 * resident session of the family when it is free (IpRunner.runListings);
 * throws as {@link runIpRaw}.
 */
export async function runListings(
  runner: IpRunner,
  lines: readonly string[],
  opts: { signal?: AbortSignal; ipv6?: boolean } = {},
): Promise<RawRun> {
  return raw(await runner.runListings(lines, opts));
}

function raw(r: RunResult): RawRun {
  if (r.killed) throw r.killed;
  return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}
