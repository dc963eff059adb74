/**
 * A stand-in `ip` (for the agent's --ip-bin) with faults chosen by files in its
 * directory, so one agent can be driven through several of them. It runs
 * the real iproute2 in the agent's netns, so the kernel state stays real.
 * A write is a batch that changes something ({@link CLASSIFY}); restores
 * (`-force`) and reads pass through untouched unless a fault names them.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import type { TempDir } from "../helpers/tmp";
import { CLASSIFY } from "./fake-ip";

const REAL_IP = existsSync("/usr/sbin/ip") ? "/usr/sbin/ip" : "/usr/bin/ip";

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
  /** How many reads were failed on purpose. */
  failedReads(): number;
}

export function faultyIp(dir: TempDir): FaultyIp {
  const f = (name: string) => dir.join(`faulty-${name}`);
  const bin = f("ip");
  writeFileSync(
    bin,
    `#!/bin/bash
${CLASSIFY}
is_read=0; (( !is_batch || changes == 0 )) && is_read=1
if [[ $is_read == 1 && -s '${f("read-fails")}' ]]; then
  n=$(cat '${f("read-fails")}')
  if (( n > 0 )); then
    echo $(( n - 1 )) > '${f("read-fails")}'
    echo x >> '${f("failed-reads")}'
    echo "Dump was interrupted and may be inconsistent." >&2
    exit 1
  fi
fi
if [[ $is_write == 0 ]]; then pass "$@"; fi
if [[ -e '${f("before")}' ]]; then
  '${REAL_IP}' -force -batch '${f("before")}' >/dev/null 2>&1
  rm -f '${f("before")}'
fi
n=$(printf '%s' "$input" | grep -c '')
if [[ -e '${f("wedge")}' ]]; then
  rm -f '${f("wedge")}'
  printf '%s' "$input" | head -n $(( n / 2 )) | '${REAL_IP}' "$@" >/dev/null 2>&1
  echo $$ > '${f("pid")}'
  exec sleep 600
fi
if [[ -s '${f("die")}' ]]; then
  k=$(cat '${f("die")}'); rm -f '${f("die")}'
  if (( n >= k )); then
    printf '%s' "$input" | head -n $(( k - 1 )) | '${REAL_IP}' "$@"
    echo $$ > '${f("pid")}'
    [[ -s '${f("arm-reads")}' ]] && mv '${f("arm-reads")}' '${f("read-fails")}'
    kill -KILL $$
  fi
fi
printf '%s' "$input" | '${REAL_IP}' "$@"
rc=$?
if (( rc != 0 )) && [[ -s '${f("arm-reads")}' ]]; then mv '${f("arm-reads")}' '${f("read-fails")}'; fi
exit $rc
`,
  );
  chmodSync(bin, 0o755);
  return {
    bin,
    dieOnLine: (k) => writeFileSync(f("die"), String(k)),
    failReadsAfterFailedWrite: (n) => writeFileSync(f("arm-reads"), String(n)),
    beforeNextWrite: (commands) => writeFileSync(f("before"), `${commands.join("\n")}\n`),
    wedgeNextWrite: () => writeFileSync(f("wedge"), ""),
    faultPid: () => (existsSync(f("pid")) ? Number(readFileSync(f("pid"), "utf8")) : undefined),
    failedReads: () =>
      existsSync(f("failed-reads"))
        ? readFileSync(f("failed-reads"), "utf8").split("\n").length - 1
        : 0,
  };
}
