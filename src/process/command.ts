/**
 * What a child process is started with, built here once for every process
 * the agent and netagentctl start (src/process/run-process.ts for one-shot
 * runs, start-process.ts for long-lived children): the argv, never through
 * a shell; the network namespace it runs in; the environment it sees.
 */

/** The command and where it runs; shared by one-shot runs and long-lived children. */
export interface Command {
  /** The program and its arguments: executed as given, no shell. */
  argv: readonly string[];
  /**
   * Runs the command inside this network namespace: a path (e.g.
   * /proc/PID/ns/net) or a name under /run/netns, entered with
   * `nsenter --net=FILE --`. (iproute2's own `-n NAME` is the caller's
   * argv: it takes names only, and costs no extra exec.)
   */
  netns?: string;
  /**
   * "clean" (default): {@link childEnv}, nothing of ours leaks into the
   * child and its words come in the C locale, which the runners parse.
   * "inherit": this process's environment (QEMU, the user's own program:
   * their TMPDIR and the rest as they set them).
   */
  env?: "clean" | "inherit";
  /**
   * A long-lived child (a monitor) that must not outlive this process, even
   * one killed with no time to stop it (SIGKILL, the OOM killer): the
   * kernel sends it SIGKILL when this process dies, set by util-linux
   * `setpriv --pdeathsig KILL` before the command is executed (kept across
   * nsenter's and stdbuf's exec). Without setpriv on PATH, started as is.
   */
  endsWithParent?: boolean;
}

/** PATH when this process has none (the guest's init may start it without one). */
const FALLBACK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The environment every child gets: PATH (to find the tools) and LC_ALL=C
 * (iproute2's and iptables' messages, which the error tables match, in
 * English; numbers without a locale's separators). Nothing else.
 */
export function childEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? FALLBACK_PATH, LC_ALL: "C" };
}

/** The file a namespace given as a name (under /run/netns) or a path stands for. */
export function netnsFile(netns: string): string {
  return netns.startsWith("/") ? netns : `/run/netns/${netns}`;
}

/**
 * The argv that is executed: `command.argv`, inside `nsenter` when a
 * namespace is given, behind `setpriv` when it ends with its parent.
 */
export function commandArgv(command: Pick<Command, "argv" | "netns" | "endsWithParent">): string[] {
  const { argv, netns } = command;
  if (argv.length === 0) throw new RangeError("a command needs a program");
  const inside =
    netns === undefined ? [...argv] : ["nsenter", `--net=${netnsFile(netns)}`, "--", ...argv];
  return command.endsWithParent && hasSetpriv() ? [...PARENT_DEATH_KILLS, ...inside] : inside;
}

/**
 * The parent-death signal is sent when the thread that started the child
 * ends: Bun starts children from the JavaScript thread (vfork there), which
 * lives as long as the process.
 */
const PARENT_DEATH_KILLS = ["setpriv", "--pdeathsig", "KILL", "--"] as const;

let setprivFound: boolean | undefined;

function hasSetpriv(): boolean {
  setprivFound ??= Bun.which("setpriv", { PATH: childEnv().PATH }) !== null;
  return setprivFound;
}

/** The environment a command's child is given (for "inherit", process.env as it is now). */
export function spawnEnv(command: Pick<Command, "env">): Record<string, string | undefined> {
  return command.env === "inherit" ? { ...process.env } : childEnv();
}
