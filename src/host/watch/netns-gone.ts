/**
 * Noticing that the pod's network namespace was deleted, without polling.
 *
 * `ip monitor` keeps the namespace alive by holding a socket in it, so it
 * sees no end of its own. Instead: a namespace named under /run/netns, or
 * any other bind mount, is gone when its file is (inotify on the directory:
 * `ip netns del` unmounts and unlinks it) or no longer the same namespace
 * inode; `/proc/PID/ns/net` is gone when process PID ends (procps
 * `pidwait`, which waits on a pidfd).
 */
import { type FSWatcher, mkdtempSync, rmSync, statSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { netnsFile } from "../../process/command";
import { type Child, startProcess } from "../../process/start-process";

function inode(path: string): string | undefined {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

/** The PID in a /proc/PID/... path, else undefined. */
function procPid(path: string): number | undefined {
  const m = /^\/proc\/(\d+)\//.exec(path);
  return m ? Number(m[1]) : undefined;
}

export class NetnsGoneWatcher {
  private readonly file: string;
  private readonly identity: string | undefined;
  private watcher: FSWatcher | undefined;
  private waiter: Child<"ignore", "ignore", "ignore"> | undefined;
  private fired = false;
  private closed = false;

  /** Calls `onGone` once, when the namespace `netns` no longer exists. */
  constructor(
    netns: string,
    private readonly onGone: () => void,
  ) {
    this.file = netnsFile(netns);
    this.identity = inode(this.file);
  }

  /** True when the file is missing or now names another inode than at the start. */
  gone(): boolean {
    const now = inode(this.file);
    return now === undefined || now !== this.identity;
  }

  start(): void {
    if (this.gone()) {
      this.fire();
      return;
    }
    const pid = procPid(this.file);
    if (pid !== undefined) {
      this.waitForPid(pid);
      return;
    }
    this.watcher = watch(dirname(this.file), { persistent: true }, () => {
      if (this.gone()) this.fire();
    });
    this.watcher.on("error", () => {});
  }

  private waitForPid(pid: number): void {
    // pidwait reads the PID from a file (a pipe is refused).
    const dir = mkdtempSync(join(tmpdir(), "netagent-pidwait-"));
    const pidfile = join(dir, "pid");
    writeFileSync(pidfile, `${pid}\n`);
    const proc = startProcess({
      argv: ["pidwait", "-F", pidfile],
      endsWithParent: true,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    });
    this.waiter = proc;
    proc.exited.then(() => {
      rmSync(dir, { recursive: true, force: true });
      if (!this.closed && this.gone()) this.fire();
    });
  }

  private fire(): void {
    if (this.fired || this.closed) return;
    this.fired = true;
    this.onGone();
  }

  /** Stops watching (and the pidwait it started, by its PID). */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.waiter?.kill("SIGTERM");
  }
}
