/**
 * Stand-in `ip` executables for the agent's --ip-bin. The agent passes its
 * children only PATH and LC_ALL, so everything a stand-in needs is written
 * into the script itself. Both run the real iproute2 (in the agent's netns,
 * which they inherit), so the kernel state stays real.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TempDir } from "../helpers/tmp";

const REAL_IP = existsSync("/usr/sbin/ip") ? "/usr/sbin/ip" : "/usr/bin/ip";

export interface IpCall {
  argv: string[];
  stdin: string;
}

/**
 * Bash that reads a batch's stdin whole into `input` and sets `is_write`: 1
 * for a batch that changes something (a line other than a show/list) and is
 * not a best-effort restore (`-force`). Told by what the run does, not by
 * flags such as -json (a change and its read-back share one process).
 * `pass` runs the real ip on the same arguments and input, and exits with its status.
 */
export const CLASSIFY = `input=""; is_batch=0; force=0
for a in "$@"; do [[ $a == -batch ]] && is_batch=1; [[ $a == -force ]] && force=1; done
if (( is_batch )); then input=$(cat; printf x); input=\${input%x}; fi
changes=$(printf '%s' "$input" | grep -cvE '^[a-z]+( -[46])? (show|list)( |$)|^$')
is_write=0; (( is_batch && !force && changes > 0 )) && is_write=1
pass() { if (( is_batch )); then printf '%s' "$input" | '${REAL_IP}' "$@"; exit $?; fi; exec '${REAL_IP}' "$@"; }
`;

/** A recorded call that changes something (see {@link CLASSIFY}). */
export function isWriteCall(c: IpCall): boolean {
  return (
    c.argv.includes("-batch") &&
    c.stdin.split("\n").some((l) => l !== "" && !/^[a-z]+( -[46])? (show|list)( |$)/.test(l))
  );
}

/**
 * A recorder: each call leaves `argv` (NUL-separated, exact) and `stdin` in
 * its own directory under `dir/calls`, then runs the real ip on the same.
 */
export function recordingIp(dir: TempDir): { bin: string; calls(): IpCall[] } {
  const calls = dir.join("calls");
  const bin = dir.join("ip-recorder");
  writeFileSync(
    bin,
    `#!/bin/bash
set -o pipefail
# Named by start time (19 digits of ns) so a listing sorts into call order.
d='${calls}'/$(date +%s%N)-$$
mkdir -p "$d"
printf '%s\\0' "$@" > "$d/argv"
tee "$d/stdin" | '${REAL_IP}' "$@"
`,
  );
  chmodSync(bin, 0o755);
  return {
    bin,
    calls: () => {
      if (!existsSync(calls)) return [];
      return readdirSync(calls)
        .sort()
        .map((c) => ({
          argv: readFileSync(join(calls, c, "argv"), "utf8")
            .split("\0")
            .slice(0, -1),
          stdin: existsSync(join(calls, c, "stdin"))
            ? readFileSync(join(calls, c, "stdin"), "utf8")
            : "",
        }));
    },
  };
}

/**
 * An ip that dies in the middle of a plan: a write batch (`-batch -` without
 * `-force`) of more than `k - 1` lines has its first k-1 lines applied by the
 * real `ip -batch`, then the process is killed (SIGKILL) as if it crashed on
 * line k. Reads and restores (`-force`) pass through. `armed` is a file:
 * remove it to make the stand-in a plain pass-through.
 */
export function dyingIp(dir: TempDir, k: number): { bin: string; armed: string; deaths(): number } {
  const bin = dir.join(`ip-dies-on-${k}`);
  const armed = dir.join("armed");
  const deaths = dir.join("deaths");
  writeFileSync(armed, "");
  writeFileSync(
    bin,
    `#!/bin/bash
${CLASSIFY}
if [[ $is_write == 1 && -e '${armed}' ]]; then
  n=$(printf '%s' "$input" | grep -c '')
  if (( n >= ${k} )); then
    printf '%s' "$input" | head -n ${k - 1} | '${REAL_IP}' "$@" || exit $?
    echo died >> '${deaths}'
    kill -KILL $$
  fi
fi
pass "$@"
`,
  );
  chmodSync(bin, 0o755);
  return {
    bin,
    armed,
    deaths: () => (existsSync(deaths) ? readFileSync(deaths, "utf8").split("\n").length - 1 : 0),
  };
}

/**
 * An ip whose write batches stop halfway: the first half of the lines is
 * applied, `halfway` appears, and the rest waits until `release` exists
 * (a slow iproute2, on cue). Reads and restores pass through.
 */
export function gatedIp(dir: TempDir): { bin: string; halfway: string; release: string } {
  const bin = dir.join("ip-gated");
  const halfway = dir.join("halfway");
  const release = dir.join("release");
  writeFileSync(
    bin,
    `#!/bin/bash
${CLASSIFY}
if [[ $is_write == 1 ]]; then
  n=$(printf '%s' "$input" | grep -c '')
  half=$(( n / 2 ))
  printf '%s' "$input" | head -n $half | '${REAL_IP}' "$@" || exit $?
  touch '${halfway}'
  until [[ -e '${release}' ]]; do sleep 0.05; done
  printf '%s' "$input" | tail -n +$(( half + 1 )) | exec '${REAL_IP}' "$@"
fi
pass "$@"
`,
  );
  chmodSync(bin, 0o755);
  return { bin, halfway, release };
}
