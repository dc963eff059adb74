/**
 * Child processes the tests start: spawned directly (no shell), output
 * captured, stopped only by their own PID; and the processes below a PID
 * as /proc shows them now (for tests and benches that count them).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { waitFor } from "./wait";

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class Child {
  stdout = "";
  stderr = "";
  readonly exited: Promise<Exit>;
  /** Resolves once its stdout and stderr are closed (after `exited`: Node's 'exit' can come first). */
  readonly closed: Promise<void>;
  exit: Exit | undefined;

  constructor(
    readonly proc: ChildProcess,
    readonly command: string,
  ) {
    proc.stdout?.setEncoding("utf8").on("data", (s: string) => {
      this.stdout += s;
    });
    proc.stderr?.setEncoding("utf8").on("data", (s: string) => {
      this.stderr += s;
    });
    this.exited = new Promise<Exit>((resolve, reject) => {
      proc.once("error", reject);
      proc.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
    this.exited.catch(() => {});
    this.closed = new Promise<void>((resolve) => {
      proc.once("close", () => resolve());
      proc.once("error", () => resolve());
    });
  }

  /**
   * Waits until its output is all read, at most `ms` after it exited (a
   * process it started may hold the pipes open): the 'exit' event can come
   * before the last of stdout, and output read then is cut short.
   */
  async drained(ms = 2000): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    try {
      await Promise.race([this.closed, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  get pid(): number {
    if (this.proc.pid === undefined) throw new Error(`${this.command}: not started`);
    return this.proc.pid;
  }

  get running(): boolean {
    return this.exit === undefined && this.proc.exitCode === null;
  }

  /** Sends `signal` to this process (by its PID) and waits for it to exit. */
  async stop(signal: NodeJS.Signals = "SIGTERM", timeoutMs = 10_000): Promise<Exit> {
    if (!this.running) return this.exited;
    process.kill(this.pid, signal);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (this.running) process.kill(this.pid, "SIGKILL");
        reject(new Error(`${this.command}: still running ${timeoutMs} ms after ${signal}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills it by PID if it is still running; for afterEach/afterAll. */
  async kill(): Promise<void> {
    if (this.running) {
      process.kill(this.pid, "SIGKILL");
      await this.exited;
    }
  }
}

/** Calls `each` with every complete, non-blank line `child` writes to stdout, as it comes. */
export function onStdoutLines(child: Child, each: (line: string) => void): void {
  let rest = "";
  child.proc.stdout?.on("data", (s: string) => {
    const lines = (rest + s).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) if (line.trim()) each(line);
  });
}

/** Whether a process with this PID exists (signal 0: nothing is sent). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `pid` and its descendants alive now (each process's parent from /proc/PID/stat). */
export function processTree(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, "utf8");
      // The command name in parentheses may hold spaces and ")": the fields after the last ")".
      parent.set(Number(d), Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {}
  }
  const out: number[] = [];
  for (const p of parent.keys()) {
    for (let q: number | undefined = p, hops = 0; q && hops < 64; q = parent.get(q), hops++) {
      if (q === pid) {
        out.push(p);
        break;
      }
    }
  }
  return out;
}

/** The process's command name (/proc/PID/comm), "" once it is gone. */
export function processName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
}

/** Starts `file` with `args`, no shell, stdin closed. */
export function start(
  file: string,
  args: readonly string[],
  env?: NodeJS.ProcessEnv,
  stdin?: string,
): Child {
  const input = stdin === undefined ? "ignore" : "pipe";
  const proc = spawn(file, args, { stdio: [input, "pipe", "pipe"], env: env ?? process.env });
  if (stdin !== undefined) {
    // A child that exits before reading all its input (an `ip -batch -` whose netns is
    // gone, say) makes this write fail with EPIPE: its exit status and stderr say why,
    // so the write's error is no error of the test process.
    proc.stdin?.on("error", () => {});
    proc.stdin?.end(stdin);
  }
  return new Child(proc, [file, ...args].join(" "));
}

/** Runs `file` (fed `stdin`, if given) to completion and returns its exit and output. */
export async function run(
  file: string,
  args: readonly string[],
  timeoutMs = 60_000,
  stdin?: string,
): Promise<Exit & { stdout: string; stderr: string }> {
  const child = start(file, args, undefined, stdin);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill().catch(() => {});
      reject(new Error(`${child.command}: timed out after ${timeoutMs} ms\n${child.stderr}`));
    }, timeoutMs);
  });
  try {
    const exit = await Promise.race([child.exited, timeout]);
    await child.drained();
    return { ...exit, stdout: child.stdout, stderr: child.stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** True once a unix socket at `path` accepts a connection. */
export function canConnect(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** Waits until `child` accepts connections on `path`; fails early if it exits. */
export async function waitForSocket(child: Child, path: string, timeoutMs = 10_000) {
  const state = await waitFor(
    async () => (!child.running ? "exited" : (await canConnect(path)) && "ready"),
    { timeoutMs, what: `${path} to accept connections (${child.command})` },
  );
  if (state === "exited") {
    throw new Error(`${child.command} exited (${JSON.stringify(child.exit)}): ${child.stderr}`);
  }
}
