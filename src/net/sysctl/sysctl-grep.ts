/**
 * Every readable file under /proc/sys/net of another network namespace
 * (the files show the namespace of the process that opens them, so a
 * process inside it reads them: `grep -rs ^ /proc/sys/net`), and of a
 * fresh namespace of this kernel (`unshare --net -- grep ...`: a namespace
 * made for that one process and gone with it). A fresh namespace's values
 * are what "nobody configured it" means on this kernel; a complete
 * comparison (src/host/compare/complete-diff.ts) takes each side's against its own.
 */
import { type Command, commandArgv } from "../../process/command";
import { runProcess } from "../../process/run-process";
import { NetError } from "../model/net-error";
import { SYSCTL_ROOT } from "./sysctl-keys";
import { parseSysctlGrep } from "./sysctl-tree";

/** How long one grep over /proc/sys/net may run (a few thousand small files). */
const SYSCTL_GREP_MS = 30_000;

/** Its output kept, at most (a namespace with a few hundred links prints ~10 MiB). */
const SYSCTL_GREP_MAX_BYTES = 32 << 20;

const GREP = ["grep", "-rs", "^", SYSCTL_ROOT];

async function grepSysctls(command: Command, signal?: AbortSignal): Promise<Map<string, string>> {
  const r = await runProcess({
    ...command,
    timeoutMs: SYSCTL_GREP_MS,
    maxOutputBytes: SYSCTL_GREP_MAX_BYTES,
    ...(signal ? { signal } : {}),
  });
  const what = commandArgv(command).join(" ");
  const { stop } = r;
  switch (stop.kind) {
    case "not-started":
      throw new NetError("unavailable", `${what}: ${stop.error.message}`);
    case "timed-out":
      throw new NetError(
        "unavailable",
        `${what}: killed (SIGKILL) after ${stop.ms} ms without finishing`,
      );
    case "output-cap":
      throw new NetError("exhausted", `${what}: more than ${stop.bytes} bytes`);
    case "aborted":
      throw new NetError("aborted", `${what}: call cancelled`, { cause: stop.reason });
  }
  const out = new TextDecoder().decode(r.stdout);
  // grep exits 2 when some file refused its read (stable_secret): the rest is good.
  if (stop.code !== 0 && !(stop.code === 2 && out !== "")) {
    throw new NetError("unavailable", `${what}: ${r.stderr.trim() || `exit status ${stop.code}`}`);
  }
  return parseSysctlGrep(out);
}

/** The files under /proc/sys/net of `netns` (a name under /run/netns or a path). */
export function readNetnsSysctlTree(netns: string, signal?: AbortSignal) {
  return grepSysctls({ argv: GREP, netns }, signal);
}

let fresh: Promise<Map<string, string>> | undefined;

/** The files under /proc/sys/net of a fresh namespace of this kernel (read once per process). */
export function readFreshSysctlTree(): Promise<Map<string, string>> {
  fresh ??= grepSysctls({ argv: ["unshare", "--net", "--", ...GREP] });
  // A failure is not kept: the next caller tries again.
  fresh.catch(() => {
    fresh = undefined;
  });
  return fresh;
}
