/**
 * What the `sync --watch` tests and bench share: the watcher as a child
 * process whose `--json` lines are parsed as they come, a pod NIC with its
 * guest twin, and the CPU ticks a process (and its children) used, from
 * /proc. (Their agent on a socket path that survives restarts:
 * test/helpers/agent.ts agentAt.)
 */
import { readFileSync } from "node:fs";
import type { WatchEvent } from "../../src/host/watch/watch-output";
import type { Netns } from "../helpers/netns";
import { type Child, onStdoutLines, processTree, start } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import { NETAGENTCTL, type PlainRoute, plainRoutes } from "./helpers";

/** dist/netagentctl --json sync --watch, its events parsed line by line. */
export class Watcher {
  readonly events: WatchEvent[] = [];
  private seen = 0;

  private constructor(readonly child: Child) {
    onStdoutLines(child, (line) => this.events.push(JSON.parse(line) as WatchEvent));
  }

  static async start(
    addr: string,
    netns: string,
    extra: string[] = [],
    firstSyncMs = 30_000,
    /** sync's per-call --timeout, in seconds. */
    callTimeoutS = 10,
  ): Promise<Watcher> {
    const w = new Watcher(
      start(NETAGENTCTL, [
        "--addr",
        addr,
        "--json",
        "--timeout",
        String(callTimeoutS),
        "sync",
        "--watch",
        "--netns",
        netns,
        ...extra,
      ]),
    );
    await w.next((e) => e.event === "resync" || e.event === "error", firstSyncMs);
    return w;
  }

  /** The first event from now on (not returned before) matching `pred`. */
  async next<E extends WatchEvent>(pred: (e: WatchEvent) => e is E, timeoutMs?: number): Promise<E>;
  async next(pred: (e: WatchEvent) => boolean, timeoutMs?: number): Promise<WatchEvent>;
  async next(pred: (e: WatchEvent) => boolean, timeoutMs = 20_000): Promise<WatchEvent> {
    return waitFor(
      () => {
        if (!this.child.running && this.seen >= this.events.length) {
          throw new Error(`watch exited: ${this.child.stderr}`);
        }
        while (this.seen < this.events.length) {
          const e = this.events[this.seen++] as WatchEvent;
          if (pred(e)) return e;
        }
        return undefined;
      },
      { timeoutMs, what: `a watch event (${this.child.stderr.slice(-500)})` },
    );
  }

  /** Resync events so far. */
  resyncs(): Extract<WatchEvent, { event: "resync" }>[] {
    return this.events.filter((e) => e.event === "resync") as Extract<
      WatchEvent,
      { event: "resync" }
    >[];
  }
}

/** A pod NIC `name` with `mac` whose peer is in `host`; up. */
export async function addPodNic(pod: Netns, host: Netns, name: string, peer: string, mac: string) {
  await pod.veth(name, peer, { mac, peerNs: host });
}

/**
 * utime+stime (clock ticks) of `pid` and of all its descendants alive now,
 * plus cutime+cstime: what its children that already ended used (so a
 * process that polls by spawning short-lived ones shows it).
 */
export function cpuTicks(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) {
    try {
      const s = readFileSync(`/proc/${p}/stat`, "utf8");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      total += Number(f[11]) + Number(f[12]);
      if (p === pid) total += Number(f[13]) + Number(f[14]);
    } catch {}
  }
  return total;
}

interface AddrLink {
  ifname: string;
  address: string;
  addr_info: { local: string; prefixlen: number; scope: string }[];
}

/** Global addresses of every link with `mac` in `ns`, as CIDRs, sorted. */
export async function addressesOf(ns: Netns, mac: string): Promise<string[]> {
  return globalAddresses(await ns.json<AddrLink[]>("addr", "show"), mac);
}

function globalAddresses(links: readonly AddrLink[], mac: string): string[] {
  return links
    .filter((l) => l.address === mac)
    .flatMap((l) =>
      l.addr_info.filter((a) => a.scope === "global").map((a) => `${a.local}/${a.prefixlen}`),
    )
    .sort();
}

/** Routes with the device names mapped to MACs (by `links`), so pod and guest names need not match. */
function routesByMac(links: readonly AddrLink[], routes: readonly PlainRoute[]): string[] {
  const mac = new Map(links.map((l) => [l.ifname, l.address]));
  return routes.map((r) => JSON.stringify({ ...r, dev: mac.get(r.dev ?? "") ?? r.dev })).sort();
}

/**
 * What guestEqualsPod compares of one side, read by one `ip` process (its
 * links with addresses and the routes of every table, of which the main
 * table's): a bench repeats this check while it measures, and each
 * process it starts takes CPU from what is measured.
 */
async function sideView(ns: Netns, macs: readonly string[]): Promise<string> {
  const [links, routes] = (await ns.listings(["addr show", "route show table all"])) as [
    AddrLink[],
    (PlainRoute & { protocol?: string; table?: string })[],
  ];
  const main = plainRoutes(routes.filter((r) => r.table === "main"));
  return JSON.stringify({
    routes: routesByMac(links, main),
    addresses: macs.map((m) => globalAddresses(links, m)),
  });
}

/** The guest has the pod's routes (by MAC) and, on each of `macs`, its global addresses. */
export async function guestEqualsPod(pod: Netns, guest: Netns, macs: string[]): Promise<boolean> {
  const [p, g] = await Promise.all([sideView(pod, macs), sideView(guest, macs)]);
  return p === g;
}
