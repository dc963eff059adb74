/**
 * `sync --watch`: one full sync, then the pod is followed with `ip monitor`
 * (and `xtables-monitor` for its packet filter, where iptables-nft makes
 * that possible) and the WHOLE state is synced again after each burst of
 * changes, by the very steps a one-shot `sync` takes (sync-once.ts).
 *
 * - A burst is debounced; one sync at a time; changes during a sync give
 *   one more (resync-scheduler.ts). A burst that leaves the requests as
 *   they were sent last time (the kernel's own routes, neighbour states)
 *   costs one read of the pod and no call.
 * - What each sync does, and the agent connection: pod-sync.ts (the unit
 *   `follow` runs once per sandbox).
 * - The namespace is deleted: a final event, then this resolves.
 * - `signal` aborts (SIGINT/SIGTERM): the sync in flight finishes first.
 */

import { type Rules, readPodRules } from "../pod/iptables-pod";
import type { PodState } from "../sync/sync-once";
import { NetnsGoneWatcher } from "./netns-gone";
import { ipMonitorTool, type MonitorTool, PodMonitor } from "./pod-monitor";
import { PodRulesReads } from "./pod-rules-reads";
import { describe, PodSync, type PodSyncOptions } from "./pod-sync";
import { RESYNC_DEFAULTS } from "./resync-scheduler";
import { xtablesMonitorTool } from "./rules-monitor";

export interface WatchOptions extends Omit<PodSyncOptions, "gone" | "onGone" | "read"> {
  /** The pod namespace, resolved (a name under /run/netns or a path). */
  netns: string;
  ipBinary?: string;
  /** One-shot sync's read of the pod, its packet filter read by `rules` (pod-rules-reads.ts). */
  read(rules: () => Promise<Rules>): Promise<PodState>;
}

export interface WatchEnd {
  reason: "netns-deleted" | "signal";
  resyncs: number;
}

/** Follows the pod until its namespace is deleted or `signal` aborts. */
export async function watchPod(o: WatchOptions, signal: AbortSignal): Promise<WatchEnd> {
  const config = o.resync ?? RESYNC_DEFAULTS;
  const at = () => new Date().toISOString();
  let ending: WatchEnd["reason"] | undefined;

  let finishResolve: (end: WatchEnd) => void = () => {};
  const finished = new Promise<WatchEnd>((resolve) => {
    finishResolve = resolve;
  });

  // The packet filter read again only when the xtables-monitor (monitors[1]) reports a change.
  const rules = new PodRulesReads(o.netns, () => monitors[1]?.pid, readPodRules);
  const unit = new PodSync({
    ...o,
    read: () => o.read(() => rules.read()),
    gone: () => gone.gone(),
    onGone: () => void finish("netns-deleted"),
  });
  /** A monitor that feeds the unit and is restarted (backoff 1 s doubling to 60 s) if it dies. */
  const follow = (tool: MonitorTool, changed = () => {}) => {
    let delay = 1000;
    const m: PodMonitor = new PodMonitor(tool, {
      onEvent: (kind) => {
        changed();
        unit.notify(kind);
      },
      onExit(status, stderr) {
        if (ending) return;
        if (gone.gone()) {
          void finish("netns-deleted");
          return;
        }
        o.emit({
          event: "warning",
          at: at(),
          message: `${tool.name} ended (${status}): ${stderr || "no message"}; restarting it in ${delay / 1000} s`,
        });
        setTimeout(() => {
          if (ending) return;
          m.start().then(
            () => {
              // Events may have been missed meanwhile: kept rules too.
              changed();
              unit.notify();
            },
            (err) =>
              o.emit({ event: "warning", at: at(), message: `${tool.name}: ${describe(err)}` }),
          );
        }, delay);
        delay = Math.min(60_000, delay * 2);
      },
    });
    return m;
  };
  const monitors = [
    follow(ipMonitorTool(o.netns, o.ipBinary)),
    follow(xtablesMonitorTool(o.netns), () => rules.changed()),
  ];
  const gone = new NetnsGoneWatcher(o.netns, () => void finish("netns-deleted"));

  async function finish(reason: WatchEnd["reason"], sig?: string): Promise<void> {
    if (ending) return;
    ending = reason;
    await unit.stop();
    for (const m of monitors) m.stop();
    gone.close();
    o.emit({
      event: "end",
      at: at(),
      reason,
      ...(sig ? { signal: sig } : {}),
      resyncs: unit.resyncs,
      unchanged: unit.unchanged,
      failures: unit.failures,
    });
    finishResolve({ reason, resyncs: unit.resyncs });
  }

  const onAbort = () => void finish("signal", String(signal.reason ?? "abort"));
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });

  o.emit({ event: "start", at: at(), pod: o.label, addr: o.addr, debounceMs: config.debounceMs });
  // Listen first, then read: a change after the first read cannot be missed.
  await monitors[0]?.start();
  try {
    await monitors[1]?.start();
  } catch (err) {
    // Optional: legacy iptables or no xtables-monitor. Rules are still read with every sync.
    o.emit({
      event: "warning",
      at: at(),
      message: `packet filter changes not followed (${describe(err)}); rules are still read with every sync, and sent where they differ`,
    });
  }
  gone.start();
  unit.notify();
  const end = await finished;
  signal.removeEventListener("abort", onAbort);
  return end;
}
