/**
 * How `follow` notices network changes in every pod at once: ONE
 * `ip monitor all-nsid` in the follower's own namespace. The kernel sends
 * such a listener the link, address, route, rule and neighbour events of
 * every namespace that has an nsid in the listener's namespace, each line
 * prefixed `[nsid N]` (`[nsid current]` for its own, ignored here).
 *
 * A pod netns gets its nsid from `ip netns set NAME auto` (iproute2 takes a
 * name under /run/netns; a pod whose veth peer is in this namespace often
 * has one already, which is kept): that adds an entry to the nsid table of
 * the namespace the follower runs in (the host's, as deployed), and nothing
 * else. Then `ip -j netns list-id` says which nsid the name got. The entry
 * goes away with the pod's namespace.
 *
 * A namespace given by another path (/proc/PID/ns/net) cannot be named to
 * `ip netns set`: it gets an `ip monitor` of its own (pod-monitor.ts), as
 * it does with `--monitor per-netns` for every sandbox.
 *
 * Link names in all-nsid lines are resolved in the wrong namespace; only
 * the nsid and the kind are used, the unit rereads the whole pod anyway.
 */
import { basename, dirname } from "node:path";
import { netnsFile } from "../../process/command";
import { runProcess } from "../../process/run-process";
import { ipMonitorTool, type MonitorKind, monitorLineKind, PodMonitor } from "../watch/pod-monitor";

export type OnChange = (kind: MonitorKind) => void;

/** A sandbox's subscription; `stop()` ends it (and its own monitor, if it has one). */
export interface Subscription {
  /** "nsid N" or "ip monitor (own)": how this namespace's changes are noticed. */
  how: string;
  stop(): void;
}

/** Pure: the nsid a line of `ip monitor all-nsid label` output begins with; "current", or undefined. */
export function lineNsid(line: string): number | "current" | undefined {
  const m = /^\[nsid (\d+|current)\]/.exec(line);
  if (!m) return undefined;
  return m[1] === "current" ? "current" : Number(m[1]);
}

/**
 * Pure: a neighbour line about a multicast or NOARP entry (`ff02::16 ...
 * lladdr 33:33:00:00:00:16 NOARP`): the kernel makes and collects those by
 * itself, and a sync never carries them (it copies permanent neighbours and
 * the default gateway's), so they wake no sandbox.
 */
export function ignoredNeighbour(line: string): boolean {
  return /\bNOARP\b|lladdr (33:33|01:00:5e):/.test(line);
}

/** Pure: the name under /run/netns (or /var/run/netns) a netns file stands for, else undefined. */
export function netnsName(netns: string): string | undefined {
  const file = netnsFile(netns);
  const dir = dirname(file);
  if (dir !== "/run/netns" && dir !== "/var/run/netns") return undefined;
  const name = basename(file);
  return /^[A-Za-z0-9._-]{1,200}$/.test(name) ? name : undefined;
}

const IP_TIMEOUT_MS = 5000;
/** Names set by one `ip` at most (its stdin: about 60 bytes a name). */
const NSID_BATCH_MAX = 500;

export class NodeMonitor {
  private readonly byNsid = new Map<number, OnChange>();
  private monitor: PodMonitor | undefined;
  private lastNsid: number | "current" | undefined;
  private stopped = false;
  private delay = 1000;
  /** Names waiting for their nsid, and whether an `ip` is setting some now. */
  private readonly asked: { name: string; resolve: (nsid: number | undefined) => void }[] = [];
  private setting = false;

  constructor(
    private readonly warn: (message: string) => void,
    private readonly mode: "all-nsid" | "per-netns" = "all-nsid",
    private readonly ipBinary = "ip",
  ) {}

  /** Starts the one all-nsid monitor; resolves once it listens. */
  async start(): Promise<void> {
    if (this.mode === "per-netns") return;
    const tool = {
      name: "ip monitor all-nsid",
      command: {
        argv: [
          this.ipBinary,
          "monitor",
          "all-nsid",
          "label",
          "link",
          "address",
          "route",
          "rule",
          "neigh",
        ],
      },
      lineKind: (line: string) => {
        // Continuations keep the nsid of the line that began the event.
        const kind = monitorLineKind(line.replace(/^\[nsid (\d+|current)\]/, ""));
        if (kind === "neigh" && ignoredNeighbour(line)) return null;
        if (kind !== null) this.lastNsid = lineNsid(line);
        return kind;
      },
      netlinkProtocol: 0,
    };
    this.monitor = new PodMonitor(tool, {
      onEvent: (kind) => {
        const nsid = this.lastNsid;
        if (typeof nsid === "number") this.byNsid.get(nsid)?.(kind);
      },
      onExit: (status, stderr) => {
        if (this.stopped) return;
        this.warn(
          `ip monitor all-nsid ended (${status}): ${stderr || "no message"}; restarting it in ${this.delay / 1000} s`,
        );
        setTimeout(() => void this.restart(), this.delay);
        this.delay = Math.min(60_000, this.delay * 2);
      },
    });
    await this.monitor.start();
  }

  private async restart(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.monitor?.start();
      // Events may have been missed meanwhile: every pod is read again.
      for (const notify of this.byNsid.values()) notify("other");
    } catch (err) {
      this.warn(`ip monitor all-nsid: ${(err as Error).message}`);
    }
  }

  /** The PID of the all-nsid monitor (for tests and the bench). */
  get pid(): number | undefined {
    return this.monitor?.pid;
  }

  /**
   * Calls `onChange` for every change in `netns` from now on. Resolves once
   * changes cannot be missed (the nsid mapped, or the own monitor listening).
   */
  async subscribe(netns: string, onChange: OnChange): Promise<Subscription> {
    const name = this.mode === "all-nsid" ? netnsName(netns) : undefined;
    const nsid = name === undefined ? undefined : await this.nsidOf(name);
    if (nsid === undefined) return this.ownMonitor(netns, onChange);
    this.byNsid.set(nsid, onChange);
    return {
      how: `nsid ${nsid}`,
      stop: () => {
        if (this.byNsid.get(nsid) === onChange) this.byNsid.delete(nsid);
      },
    };
  }

  /**
   * Gives `name` an nsid here if it has none, and says which it has;
   * undefined if that failed. The names asked for while one `ip` runs go
   * together in the next: a follower's start asks for every pod at once,
   * and one process sets them all (`-force`: the batch goes on past a set
   * refused because a namespace has an nsid already, and the listing at
   * its end says which each has). `name` is netnsName's, letters, digits
   * and `._-` alone, so it is one word of a batch line.
   */
  private nsidOf(name: string): Promise<number | undefined> {
    return new Promise((resolve) => {
      this.asked.push({ name, resolve });
      if (!this.setting) void this.setNsids();
    });
  }

  /** Sets the nsids asked for, one batch at a time, until none is waiting. */
  private async setNsids(): Promise<void> {
    this.setting = true;
    try {
      while (this.asked.length > 0) {
        const batch = this.asked.splice(0, NSID_BATCH_MAX);
        const ids = await this.runNsidBatch(batch.map((a) => a.name));
        for (const { name, resolve } of batch) {
          const nsid = ids.nsids.get(name);
          if (nsid === undefined)
            this.warn(`ip netns set ${name} auto: ${ids.why}; its own ip monitor instead`);
          resolve(nsid);
        }
      }
    } finally {
      this.setting = false;
    }
  }

  private async runNsidBatch(
    names: readonly string[],
  ): Promise<{ nsids: Map<string, number>; why: string }> {
    const r = await runProcess({
      argv: [this.ipBinary, "-j", "-force", "-batch", "-"],
      stdin: `${names.map((n) => `netns set ${n} auto\n`).join("")}netns list-id\n`,
      timeoutMs: IP_TIMEOUT_MS,
      maxOutputBytes: 1 << 20,
      maxStderrBytes: 4096,
    });
    const nsids = new Map<string, number>();
    try {
      const ids = JSON.parse(new TextDecoder().decode(r.stdout)) as {
        nsid: number;
        name?: string;
      }[];
      for (const e of ids) if (e.name !== undefined) nsids.set(e.name, e.nsid);
    } catch {}
    return { nsids, why: r.stderr.trim().split("\n")[0] || r.stop.kind };
  }

  private async ownMonitor(netns: string, onChange: OnChange): Promise<Subscription> {
    let ended = false;
    const m: PodMonitor = new PodMonitor(ipMonitorTool(netns, this.ipBinary), {
      onEvent: onChange,
      onExit: (status, stderr) => {
        // The namespace's end is noticed by its sandbox; anything else is said.
        if (!ended)
          this.warn(`ip monitor in ${netns} ended (${status}): ${stderr || "no message"}`);
      },
    });
    await m.start();
    return {
      how: "ip monitor (own)",
      stop: () => {
        ended = true;
        m.stop();
      },
    };
  }

  /** Stops the all-nsid monitor (subscriptions' own monitors are stopped by their owners). */
  stop(): void {
    this.stopped = true;
    this.monitor?.stop();
  }
}
