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
 * - A NIC new in the pod: the sync waits for the guest's hot-plugged twin
 *   exactly as one-shot sync does. A NIC gone from the pod: retire-nics.ts.
 * - The connection drops (agent restarted, VM paused): noticed at once,
 *   reconnect with backoff, then the whole state is resent.
 * - The namespace is deleted: a final event, then this resolves.
 * - `signal` aborts (SIGINT/SIGTERM): the sync in flight finishes first.
 */

import { AgentClient } from "../../client/client";
import { withStatus } from "../../common/error-status";
import { dial } from "../../transport/dial";
import { Code, codeName, TtrpcError } from "../../ttrpc/codes";
import { departedMacs, retireNics } from "../sync/retire-nics";
import type { PodReport, PodState } from "../sync/sync-once";
import { NetnsGoneWatcher } from "./netns-gone";
import { ipMonitorTool, type MonitorTool, PodMonitor } from "./pod-monitor";
import {
  RESYNC_DEFAULTS,
  type ResyncConfig,
  ResyncScheduler,
  type SyncOutcome,
} from "./resync-scheduler";
import { xtablesMonitorTool } from "./rules-monitor";
import { packetFilterSummary, type RetiredNic, type WatchEvent } from "./watch-output";
import { diffPodState, samePodState } from "./watch-report";

export interface WatchOptions {
  /** The pod namespace, resolved (a name under /run/netns or a path). */
  netns: string;
  /** For messages: "netns pod1". */
  label: string;
  addr: string;
  timeoutMs: number;
  /** One-shot sync's read of the pod (sync-once.ts). */
  read(): Promise<PodState>;
  /** One-shot sync's drive of the agent (sync-once.ts: Apply when offered, else the Kata calls). */
  drive(client: AgentClient, pod: PodState): Promise<PodReport>;
  emit(event: WatchEvent): void;
  resync?: ResyncConfig;
  ipBinary?: string;
}

export interface WatchEnd {
  reason: "netns-deleted" | "signal";
  resyncs: number;
}

/**
 * Errors worth retrying on their own: the agent unreachable or gone, a
 * deadline, a NIC not (yet) in the guest, a pod read that failed. An agent
 * refusing the pod's state (INVALID_ARGUMENT, ...) waits for the pod to change.
 */
export function isRetryable(thrown: unknown): boolean {
  const err = withStatus(thrown);
  if (!(err instanceof TtrpcError)) return true;
  return [
    Code.UNAVAILABLE,
    Code.DEADLINE_EXCEEDED,
    Code.NOT_FOUND,
    Code.CANCELLED,
    Code.ABORTED,
  ].includes(err.code);
}

/** Errors after which the connection itself is suspect (not an answer such as NOT_FOUND). */
function isConnectionError(thrown: unknown): boolean {
  const err = withStatus(thrown);
  if (!(err instanceof TtrpcError)) return true;
  return [Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.CANCELLED].includes(err.code);
}

function describe(thrown: unknown): string {
  const err = withStatus(thrown);
  if (err instanceof TtrpcError) return `${codeName(err.code)}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * For an Apply (which can say "down"): the pod's whole state plus each
 * retired NIC the guest still has, listed with no addresses and down
 * (name and MTU kept). The Kata calls ignore `full`.
 */
function withRetired(pod: PodState, retired: readonly RetiredNic[]): PodState {
  const gone = retired.filter((r) => r.found);
  if (!pod.full || gone.length === 0) return pod;
  const links = gone.map((r) => ({
    index: -1,
    name: "",
    mac: r.hwAddr,
    mtu: 0,
    flags: [],
    kind: "",
    addresses: [],
  }));
  return { ...pod, full: { ...pod.full, links: [...pod.full.links, ...links] } };
}

/** Follows the pod until its namespace is deleted or `signal` aborts. */
export async function watchPod(o: WatchOptions, signal: AbortSignal): Promise<WatchEnd> {
  const config = o.resync ?? RESYNC_DEFAULTS;
  const at = () => new Date().toISOString();
  let client: AgentClient | undefined;
  let lost = false; // a connection was lost since the last successful sync
  let last: PodState | undefined;
  let tracked = new Set<string>();
  let seq = 0;
  let resyncs = 0;
  let unchanged = 0;
  let failures = 0;
  let trigger: Record<string, number> = {};
  let ending: WatchEnd["reason"] | undefined;
  let endSignal: string | undefined;

  let finishResolve: (end: WatchEnd) => void = () => {};
  const finished = new Promise<WatchEnd>((resolve) => {
    finishResolve = resolve;
  });

  const connect = async (): Promise<AgentClient> => {
    const socket = await dial(o.addr, o.timeoutMs);
    const c = new AgentClient(socket);
    socket.on("close", () => {
      if (client !== c || ending) return;
      // Agent restarted or the connection dropped while idle: resync now.
      client = undefined;
      lost = true;
      scheduler.notify();
    });
    return c;
  };

  const runSync = async (): Promise<SyncOutcome> => {
    const t0 = performance.now();
    const cause = trigger;
    trigger = {};
    seq++;
    const elapsed = () => Math.round((performance.now() - t0) * 10) / 10;
    let pod: PodState;
    try {
      pod = await o.read();
    } catch (err) {
      if (gone.gone()) {
        void finish("netns-deleted");
        return "ok";
      }
      failures++;
      o.emit({
        event: "error",
        at: at(),
        seq,
        ms: elapsed(),
        message: `reading ${o.label}: ${describe(err)}`,
        retry: true,
      });
      return "retry";
    }
    const requests = pod.requests;
    if (last && !lost && client && samePodState(last, pod)) {
      unchanged++;
      seq--;
      return "ok";
    }
    try {
      const reconnected = lost;
      if (!client || client.closed) client = await connect();
      const retired: RetiredNic[] = await retireNics(
        client,
        departedMacs(tracked, requests),
        o.timeoutMs,
      );
      const report = await o.drive(client, withRetired(pod, retired));
      const viaApply = report.kind === "apply";
      for (const r of retired) r.down = viaApply && r.found;
      resyncs++;
      o.emit({
        event: "resync",
        at: at(),
        seq,
        ms: elapsed(),
        initial: last === undefined && !reconnected,
        trigger: cause,
        reconnected,
        changes: diffPodState(last, pod),
        retired,
        interfaces: requests.interfaces.length,
        routes: requests.routes.length,
        neighbors: requests.neighbors.length,
        via: report.kind,
        waited:
          report.kind === "kata"
            ? report.sync.interfaces
                .filter((i) => i.attempts > 1)
                .map((i) => ({ name: i.name, attempts: i.attempts }))
            : [],
        guestRoutes:
          report.kind === "kata"
            ? report.sync.routes.length
            : (report.apply.result?.routes.length ?? 0),
        packetFilter: packetFilterSummary(report.rules),
        notMirrored: report.kind === "apply" ? report.apply.notMirrored : [],
      });
      last = pod;
      lost = false;
      tracked = new Set(requests.interfaces.map((i) => i.hwAddr.toLowerCase()));
      return "ok";
    } catch (err) {
      failures++;
      const retry = isRetryable(err);
      if (retry && client && isConnectionError(err)) {
        // Start from a fresh connection: the old one may be half dead.
        const c = client;
        client = undefined;
        c.close();
        lost = true;
      }
      o.emit({ event: "error", at: at(), seq, ms: elapsed(), message: describe(err), retry });
      return retry ? "retry" : "failed";
    }
  };

  const scheduler = new ResyncScheduler(runSync, config);
  /** A monitor that feeds the scheduler and is restarted (backoff 1 s doubling to 60 s) if it dies. */
  const follow = (tool: MonitorTool) => {
    let delay = 1000;
    const m: PodMonitor = new PodMonitor(tool, {
      onEvent(kind) {
        trigger[kind] = (trigger[kind] ?? 0) + 1;
        scheduler.notify();
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
            () => scheduler.notify(), // events may have been missed meanwhile
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
    follow(xtablesMonitorTool(o.netns)),
  ];
  const gone = new NetnsGoneWatcher(o.netns, () => void finish("netns-deleted"));

  async function finish(reason: WatchEnd["reason"], sig?: string): Promise<void> {
    if (ending) return;
    ending = reason;
    endSignal = sig;
    await scheduler.stop();
    for (const m of monitors) m.stop();
    gone.close();
    client?.close();
    o.emit({
      event: "end",
      at: at(),
      reason,
      ...(endSignal ? { signal: endSignal } : {}),
      resyncs,
      unchanged,
      failures,
    });
    finishResolve({ reason, resyncs });
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
    // Optional: legacy iptables or no xtables-monitor. Rules still go with every sync.
    o.emit({
      event: "warning",
      at: at(),
      message: `packet filter changes not followed (${describe(err)}); rules are still sent with every sync`,
    });
  }
  gone.start();
  scheduler.notify();
  const end = await finished;
  signal.removeEventListener("abort", onAbort);
  return end;
}
