/**
 * Stand-in `ip` executables for the agent's --ip-bin: a recorder, one that
 * dies on batch line k, one that stops halfway on cue, a slow one. Each
 * speaks the agent's resident-session protocol as well as its one-shot
 * runs (ip-standin/exchanges.ts) and runs the real iproute2 (in the
 * agent's netns, which it inherits), so the kernel state stays real.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TempDir } from "../helpers/tmp";
import { writeStandin } from "./ip-standin/config";
import { isChangeLine } from "./ip-standin/exchanges";

/** One exchange a stand-in was fed (a one-shot run is one exchange). */
export interface IpCall {
  argv: string[];
  /** The exchange's lines, without its end marker ("" for a plain command). */
  stdin: string;
  /** The stand-in process that served it: exchanges of one session share it. */
  pid: number;
}

/**
 * A recorded exchange that changes something: a batch with a line other
 * than a show/list, told by what the lines do, not by flags such as -json
 * (a change and its read-back share one exchange).
 */
export function isWriteCall(c: IpCall): boolean {
  return c.argv.includes("-batch") && c.stdin.split("\n").some(isChangeLine);
}

/**
 * A recorder: each exchange leaves `argv` (NUL-separated, exact), `stdin`
 * (its lines) and `pid` in its own directory under `dir/calls`, then the
 * real ip runs it.
 */
export function recordingIp(dir: TempDir): { bin: string; calls(): IpCall[] } {
  const calls = dir.join("calls");
  const bin = writeStandin(dir.join("ip-recorder"), { kind: "record", calls });
  return {
    bin,
    calls: () => {
      if (!existsSync(calls)) return [];
      const read = (c: string, f: string) => readFileSync(join(calls, c, f), "latin1");
      return readdirSync(calls)
        .sort()
        .map((c) => ({
          argv: read(c, "argv").split("\0").slice(0, -1),
          stdin: read(c, "stdin"),
          pid: Number(read(c, "pid")),
        }));
    },
  };
}

/**
 * An ip that dies in the middle of a plan: a write (an exchange that
 * changes something, not a `-force` restore) of k lines or more has its
 * first k-1 lines applied by the real ip, then the stand-in is killed
 * (SIGKILL) as if it crashed on line k. Reads and restores pass through.
 * `armed` is a file: remove it to make the stand-in a plain pass-through.
 */
export function dyingIp(
  dir: TempDir,
  k: number,
): {
  bin: string;
  armed: string;
  deaths(): number;
  /** For each death, how many exchanges the killed process had answered before (0: a fresh one). */
  answeredBeforeDeath(): number[];
} {
  const armed = dir.join("armed");
  const deaths = dir.join("deaths");
  writeFileSync(armed, "");
  const bin = writeStandin(dir.join(`ip-dies-on-${k}`), { kind: "dying", k, armed, deaths });
  const lines = () =>
    existsSync(deaths) ? readFileSync(deaths, "utf8").split("\n").slice(0, -1) : [];
  return {
    bin,
    armed,
    deaths: () => lines().length,
    answeredBeforeDeath: () => lines().map(Number),
  };
}

/**
 * An ip whose writes stop halfway: the first half of the exchange's lines
 * is applied, `halfway` appears (holding how many exchanges the process had
 * answered before), and the rest waits until `release` exists (a slow
 * iproute2, on cue). Reads and restores pass through.
 */
export function gatedIp(dir: TempDir): { bin: string; halfway: string; release: string } {
  const halfway = dir.join("halfway");
  const release = dir.join("release");
  const bin = writeStandin(dir.join("ip-gated"), { kind: "gated", halfway, release });
  return { bin, halfway, release };
}

/**
 * A slow ip: every exchange (a one-shot run is one) waits `ms` before the
 * real ip runs it, and counts itself.
 */
export function slowIp(dir: TempDir, ms: number): { bin: string; exchanges(): number } {
  const count = dir.join("slow-exchanges");
  writeFileSync(count, "");
  const bin = writeStandin(dir.join("ip-slow"), { kind: "slow", ms, count });
  return { bin, exchanges: () => readFileSync(count, "utf8").split("\n").length - 1 };
}
