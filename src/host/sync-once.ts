/**
 * One sync of a pod into the guest: what `netagentctl sync` does once and
 * `sync --watch` after every burst of changes. Keep it the only place that
 * decides what is read from the pod and which calls carry it, so both
 * modes always do the same thing.
 */

import type { AgentClient } from "./client";
import type { SyncOptions, SyncReport } from "./drive-agent";
import { syncAgent } from "./drive-agent";
import { type MirrorReport, mirrorRules, type Rules, readPodRules } from "./iptables-mirror";
import type { SyncRequests } from "./sync";

/** Everything a sync reads from the pod. */
export interface PodState {
  requests: SyncRequests;
  /** The pod's packet filter; absent when the pod is not a namespace (a CNI result). */
  rules?: Rules;
}

export interface OnceReport {
  sync: SyncReport;
  rules: MirrorReport | { skipped: string };
}

/** Reads the pod: its network requests, and its rules when it is a namespace. */
export async function readPodState(source: {
  netns?: string;
  read(): Promise<SyncRequests>;
}): Promise<PodState> {
  const requests = await source.read();
  if (source.netns === undefined) return { requests };
  return { requests, rules: await readPodRules(source.netns) };
}

/** Drives the agent with `pod`: the Kata sequence, then the packet filter. Throws the first failure. */
export async function syncOnce(
  client: AgentClient,
  pod: PodState,
  options: SyncOptions,
): Promise<OnceReport> {
  const sync = await syncAgent(client, pod.requests, options);
  if (pod.rules === undefined) return { sync, rules: { skipped: "not read (no pod netns)" } };
  options.progress?.update("SetIPTables");
  const rules = await mirrorRules(client, pod.rules, { timeoutMs: options.timeoutMs });
  options.progress?.clear();
  return { sync, rules };
}
