/**
 * How a stand-in `ip` is made: a two-line shell script that execs bun on
 * main.ts with a JSON file saying which stand-in it is and where its files
 * are. The agent passes its children only PATH and LC_ALL, so every path
 * (bun's included) is written out absolute; `exec` keeps the PID the agent
 * sees (and kills) the stand-in's own.
 */
import { chmodSync, realpathSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { exchangeLogPath } from "./log";

/** Which stand-in, and the files through which a test arms and observes it. */
export type StandinConfig =
  /** Records each exchange (argv, lines, PID) in its own directory under `calls`. */
  | { kind: "record"; calls: string }
  /** While `armed` exists, a write of k or more lines dies (SIGKILL) on line k. */
  | { kind: "dying"; k: number; armed: string; deaths: string }
  /** A write applies half its lines, touches `halfway` and waits for `release`. */
  | { kind: "gated"; halfway: string; release: string }
  /** Faults chosen by files named `prefix` + fault (see faulty-ip.ts). */
  | { kind: "faulty"; prefix: string }
  /** Each exchange waits `ms` first and leaves a line in `count`. */
  | { kind: "slow"; ms: number; count: string };

const BUN = realpathSync(fileURLToPath(new URL("../../../node_modules/.bin/bun", import.meta.url)));
const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

/** Writes the stand-in `bin` (mode 0755), its configuration beside it, and where it logs exchanges. */
export function writeStandin(bin: string, config: StandinConfig): string {
  const json = `${bin}.json`;
  for (const p of [BUN, MAIN, json]) {
    if (/['\n]/.test(p)) throw new Error(`stand-in path not quotable: ${JSON.stringify(p)}`);
  }
  writeFileSync(json, JSON.stringify({ ...config, log: exchangeLogPath(bin) }));
  writeFileSync(bin, `#!/bin/sh\nexec '${BUN}' '${MAIN}' '${json}' "$@"\n`);
  chmodSync(bin, 0o755);
  return bin;
}
