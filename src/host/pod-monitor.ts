/**
 * PodMonitor: the one runner of `ip monitor` for `sync --watch`. It follows
 * a pod namespace's links, addresses, routes, rules and neighbours and
 * reports each event's kind; it never polls (ip blocks on its netlink
 * socket, we block on its pipe).
 *
 * iproute2 6.1's `ip monitor` ignores `-json`, so events are read from its
 * `label` output: a line starting with `[LINK]`, `[ADDR]`, `[ROUTE]`,
 * `[RULE]` or `[NEIGH]` begins an event, indented lines continue it. What
 * changed is not parsed from here: the watch rereads the whole pod.
 */
import { readFileSync } from "node:fs";

export type MonitorKind = "link" | "addr" | "route" | "rule" | "neigh" | "other";

const KINDS: Record<string, MonitorKind> = {
  LINK: "link",
  ADDR: "addr",
  ROUTE: "route",
  RULE: "rule",
  NEIGH: "neigh",
};

/** Pure: the kind of event a line of `ip monitor label` output begins, or null for a continuation. */
export function monitorLineKind(line: string): MonitorKind | null {
  if (line === "" || line.startsWith(" ") || line.startsWith("\t")) return null;
  const m = /^\[([A-Z]+)\]/.exec(line);
  if (!m) return "other";
  return KINDS[m[1] as string] ?? "other";
}

/** argv of the monitor for a pod namespace given as a name under /run/netns or a path. */
export function monitorArgv(netns: string, binary = "ip"): string[] {
  const args = ["monitor", "label", "link", "address", "route", "rule", "neigh"];
  return netns.startsWith("/")
    ? ["nsenter", `--net=${netns}`, "--", binary, ...args]
    : [binary, "-n", netns, ...args];
}

/**
 * Whether process `pid` has a route netlink socket bound with multicast
 * groups: i.e. `ip monitor` is listening. Read from /proc/PID/net/netlink
 * (its own namespace's table); the first netlink socket of a process gets
 * the port id equal to its PID.
 */
export function netlinkListening(pid: number): boolean {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/net/netlink`, "utf8");
  } catch {
    return false;
  }
  return text
    .split("\n")
    .slice(1)
    .some((line) => {
      const [, eth, port, groups] = line.trim().split(/\s+/);
      return eth === "0" && Number(port) === pid && groups !== undefined && /[1-9a-f]/.test(groups);
    });
}

export interface MonitorHandlers {
  onEvent(kind: MonitorKind): void;
  /** ip exited (code, or the signal's name) with its stderr; not called after stop(). */
  onExit(status: number | string, stderr: string): void;
}

export class PodMonitor {
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  private stopped = false;

  constructor(
    readonly netns: string,
    private readonly handlers: MonitorHandlers,
    readonly binary = process.env.NETAGENT_IP_BIN || "ip",
  ) {}

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /**
   * Starts ip and resolves once it listens (so no change after this
   * resolves can be missed), or rejects if it exits first. The wait checks
   * /proc every 2 ms for at most `readyTimeoutMs`: once, at start.
   */
  async start(readyTimeoutMs = 5000): Promise<void> {
    const proc = Bun.spawn(monitorArgv(this.netns, this.binary), {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
    });
    this.proc = proc;
    const stderr = new Response(proc.stderr as ReadableStream).text();
    this.readLines(proc.stdout as ReadableStream<Uint8Array>);
    let exited = false;
    proc.exited.then(async (code) => {
      exited = true;
      if (this.stopped) return;
      this.handlers.onExit(proc.signalCode ?? code, (await stderr).trim());
    });
    const until = performance.now() + readyTimeoutMs;
    while (!netlinkListening(proc.pid)) {
      if (exited) throw new Error(`ip monitor exited at once: ${(await stderr).trim()}`);
      if (performance.now() > until) {
        this.stop();
        throw new Error(`ip monitor did not start listening within ${readyTimeoutMs} ms`);
      }
      await Bun.sleep(2);
    }
  }

  private async readLines(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let rest = "";
    try {
      for await (const chunk of stream) {
        const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
        rest = lines.pop() ?? "";
        // A line is bounded by what one netlink message prints; `rest` only
        // holds the unfinished one, cut at 64 KiB in case ip prints garbage.
        if (rest.length > 65_536) rest = "";
        for (const line of lines) {
          const kind = monitorLineKind(line);
          if (kind && !this.stopped) this.handlers.onEvent(kind);
        }
      }
    } catch {
      // The pipe closed under us (stop): nothing more to read.
    }
  }

  /** Stops ip by its PID (SIGTERM); idempotent. */
  stop(): void {
    this.stopped = true;
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
    }
  }
}
