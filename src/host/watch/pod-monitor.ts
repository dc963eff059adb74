/**
 * PodMonitor: runs an event monitor inside the pod's namespace for
 * `sync --watch` and reports each event's kind; it never polls (the tool
 * blocks on its netlink socket, we block on its pipe). The tool is
 * described by a MonitorTool: `ip monitor` here (links, addresses, routes,
 * rules, neighbours), xtables-monitor in rules-monitor.ts.
 *
 * iproute2 6.1's `ip monitor` ignores `-json`, so events are read from its
 * `label` output: a line starting with `[LINK]`, `[ADDR]`, `[ROUTE]`,
 * `[RULE]` or `[NEIGH]` begins an event, indented lines continue it. What
 * changed is not parsed from here: the watch rereads the whole pod.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import type { Command } from "../../process/command";
import { type Child, startProcess } from "../../process/start-process";

export type MonitorKind = "link" | "addr" | "route" | "rule" | "neigh" | "filter" | "other";

/** A monitor program: how to start it, how its lines read, which netlink family it listens on. */
export interface MonitorTool {
  name: string;
  /** What runs, and in which namespace. */
  command: Command;
  /** The kind of event a line begins, or null for a continuation or noise. */
  lineKind(line: string): MonitorKind | null;
  /** NETLINK_ROUTE 0, NETLINK_NETFILTER 12. */
  netlinkProtocol: number;
}

/** `ip monitor` in the pod namespace `netns` (a name under /run/netns or a path). */
export function ipMonitorTool(netns: string, binary = "ip"): MonitorTool {
  return {
    name: "ip monitor",
    command: monitorCommand(netns, binary),
    lineKind: monitorLineKind,
    netlinkProtocol: 0,
  };
}

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

/**
 * The monitor for a pod namespace given as a name under /run/netns (iproute2's
 * own `-n`) or a path (entered with nsenter: `-n` takes names only).
 */
function monitorCommand(netns: string, binary = "ip"): Command {
  const args = ["monitor", "label", "link", "address", "route", "rule", "neigh"];
  return netns.startsWith("/")
    ? { argv: [binary, ...args], netns }
    : { argv: [binary, "-n", netns, ...args] };
}

/**
 * Whether process `pid` holds a netlink socket of `protocol` bound to
 * multicast groups: i.e. the monitor is listening. Its socket inodes (from
 * /proc/PID/fd) are looked up in /proc/PID/net/netlink, its namespace's table.
 */
function netlinkListening(pid: number, protocol = 0): boolean {
  let text: string;
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1] as string);
    }
    text = readFileSync(`/proc/${pid}/net/netlink`, "utf8");
  } catch {
    return false;
  }
  return text
    .split("\n")
    .slice(1)
    .some((line) => {
      const f = line.trim().split(/\s+/);
      const [eth, groups, inode] = [f[1], f[3], f[9]];
      return eth === String(protocol) && /[1-9a-f]/.test(groups ?? "") && inodes.has(inode ?? "");
    });
}

export interface MonitorHandlers {
  onEvent(kind: MonitorKind): void;
  /** ip exited (code, or the signal's name) with its stderr; not called after stop(). */
  onExit(status: number | string, stderr: string): void;
}

export class PodMonitor {
  private proc: Child<"ignore", "pipe", "pipe"> | undefined;
  private stopped = false;

  constructor(
    readonly tool: MonitorTool,
    private readonly handlers: MonitorHandlers,
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
    const proc = startProcess({
      ...this.tool.command,
      endsWithParent: true,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    this.proc = proc;
    const stderr = new Response(proc.stderr).text();
    this.readLines(proc.stdout);
    let exited = false;
    proc.exited.then(async ({ code, signal }) => {
      exited = true;
      if (this.stopped) return;
      this.handlers.onExit(signal ?? code, (await stderr).trim());
    });
    const until = performance.now() + readyTimeoutMs;
    const name = this.tool.name;
    while (!netlinkListening(proc.pid, this.tool.netlinkProtocol)) {
      if (exited)
        throw new Error(`${name} exited at once: ${(await stderr).trim() || "no message"}`);
      if (performance.now() > until) {
        this.stop();
        throw new Error(`${name} did not start listening within ${readyTimeoutMs} ms`);
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
          const kind = this.tool.lineKind(line);
          if (kind && !this.stopped) this.handlers.onEvent(kind);
        }
      }
    } catch {
      // The pipe closed under us (stop): nothing more to read.
    }
  }

  /** Stops the tool by its PID (SIGTERM); idempotent. */
  stop(): void {
    this.stopped = true;
    this.proc?.kill("SIGTERM");
  }
}
