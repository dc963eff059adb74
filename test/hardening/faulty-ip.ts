/**
 * A stand-in `ip` (for the agent's --ip-bin) with faults chosen by files in its
 * directory, so one agent can be driven through several of them. It runs
 * the real iproute2 in the agent's netns, so the kernel state stays real,
 * and speaks the resident-session protocol as well as one-shot runs
 * (ip-standin/exchanges.ts): each fault applies to one exchange. A write is
 * an exchange that changes something (by what its lines do); restores
 * (`-force`) and reads pass through untouched unless a fault names them.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { TempDir } from "../helpers/tmp";
import { writeStandin } from "./ip-standin/config";
import { exchangeLog, type LoggedExchange } from "./ip-standin/log";

export interface FaultyIp {
  bin: string;
  /** The next write applies its first `k - 1` lines, then ip is killed (SIGKILL) on line k. */
  dieOnLine(k: number): void;
  /** After the next failed write, this many reads fail ("Dump was interrupted"). */
  failReadsAfterFailedWrite(n: number): void;
  /** Before the next write runs, the real ip runs these commands (the kernel acting meanwhile). */
  beforeNextWrite(commands: string[]): void;
  /** The next write applies half its lines and then hangs (a wedged iproute2). */
  wedgeNextWrite(): void;
  /** PID of the process wedged or killed by the last fault, once it started. */
  faultPid(): number | undefined;
  /** How many exchanges that process had answered before the fault (0: a fresh process). */
  faultAfter(): number | undefined;
  /** How many reads were failed on purpose. */
  failedReads(): number;
  /** Every exchange so far: the process, and how many it had answered before (0: its first). */
  exchanges(): LoggedExchange[];
}

/** Each fault is a file named `faulty-` + fault in `dir`; ip-standin/main.ts reads them. */
export function faultyIp(dir: TempDir): FaultyIp {
  const f = (name: string) => dir.join(`faulty-${name}`);
  const bin = writeStandin(f("ip"), { kind: "faulty", prefix: dir.join("faulty-") });
  // "PID EXCHANGES", written when a fault hits.
  const fault = () =>
    existsSync(f("pid")) ? readFileSync(f("pid"), "utf8").split(" ").map(Number) : undefined;
  return {
    bin,
    dieOnLine: (k) => writeFileSync(f("die"), String(k)),
    failReadsAfterFailedWrite: (n) => writeFileSync(f("arm-reads"), String(n)),
    beforeNextWrite: (commands) => writeFileSync(f("before"), `${commands.join("\n")}\n`),
    wedgeNextWrite: () => writeFileSync(f("wedge"), ""),
    faultPid: () => fault()?.[0],
    faultAfter: () => fault()?.[1],
    exchanges: () => exchangeLog(bin),
    failedReads: () =>
      existsSync(f("failed-reads"))
        ? readFileSync(f("failed-reads"), "utf8").split("\n").length - 1
        : 0,
  };
}
