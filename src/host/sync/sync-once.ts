/**
 * One sync of a pod into the guest: what `netagentctl sync` does once and
 * `sync --watch` after every burst of changes. Keep it the only place that
 * decides what is read from the pod and which calls carry it, so both
 * modes always do the same thing.
 */

import type { AgentClient } from "../../client/client";
import { Network, type State } from "../../gen/network_pb";
import { IpRunner } from "../../net/iproute/ip-runner";
import { waitLinksReady } from "../../net/iproute/link-ready";
import { type Rules, readPodRules } from "../pod/iptables-pod";
import type { SyncRequests } from "../pod/pod-requests";
import { type PodFullState, readFreshDefaults } from "../pod/pod-state";
import type { SyncOptions, SyncReport } from "./drive-agent";
import { syncAgent } from "./drive-agent";
import { applyRequestFor, notMirrored, probeNetwork } from "./drive-state";
import { type MirrorReport, mirrorRules } from "./iptables-mirror";
import { describeField } from "./mirror-scope";
import { isLinkNotFound, KATA_RETRY, retry } from "./retry";

/** Everything a sync reads from the pod. */
export interface PodState {
  requests: SyncRequests;
  /** The pod's packet filter; absent when the pod is not a namespace (a CNI result). */
  rules?: Rules;
  /** The whole network state, for netagent.v1 Apply (namespaces only, when asked for). */
  full?: PodFullState;
}

interface OnceReport {
  sync: SyncReport;
  rules: MirrorReport | { skipped: string };
}

/**
 * Reads the pod: its network requests, and its rules when it is a
 * namespace; with `full`, its whole state too (routes of every table, ip
 * rules, sysctls) for an Apply. A namespace is read once its links with
 * carrier are ready (at most a second: link-ready.ts).
 */
export async function readPodState(
  source: {
    netns?: string;
    read(): Promise<SyncRequests>;
    readState?: () => Promise<PodFullState>;
    /**
     * Both at once, from one read (taken instead of the two when the whole
     * state is wanted), and whether a link of that read was not yet ready.
     */
    readBoth?: () => Promise<{
      requests: SyncRequests;
      full: PodFullState;
      awaitingReady?: boolean;
    }>;
    /** The pod's packet filter (default: readPodRules; a followed pod's: pod-rules-reads.ts). */
    readRules?: () => Promise<Rules>;
  },
  options: { full?: boolean } = {},
): Promise<PodState> {
  if (source.netns === undefined) return { requests: await source.read() };
  const netns = source.netns;
  // A pod read while a link of it that just came up is not yet ready
  // lacks the link-local and fe80::/64 route the kernel makes a moment
  // later: the guest mirrored from it would differ from the pod at once.
  // Best effort: a pod that cannot be read is named by the read after.
  const linksReady = () => waitLinksReady(new IpRunner({ netns })).catch(() => undefined);
  const readRules = source.readRules ?? (() => readPodRules(netns));
  if (options.full && source.readBoth) {
    const readBoth = source.readBoth;
    const [first, rules] = await allInOrder([readBoth(), readRules()]);
    // The read says whether a link awaits readiness: waited for, and read
    // again, only then (no read of the links before every read).
    const both = first.awaitingReady ? await linksReady().then(readBoth) : first;
    return { requests: both.requests, rules, full: both.full };
  }
  await linksReady();
  // Three reads of one namespace, each its own processes: at once.
  const [requests, full, rules] = await allInOrder([
    source.read(),
    options.full && source.readState ? source.readState() : Promise.resolve(undefined),
    readRules(),
  ]);
  return { requests, rules, ...(full ? { full } : {}) };
}

/**
 * Promise.all, but when several reject, the first in the list's error is
 * thrown, whichever came first: the source's reads say what failed in the
 * caller's words ("reading netns X on this host: ..."), the packet
 * filter's read only in iptables'.
 */
async function allInOrder<T extends readonly unknown[]>(
  reads: { [K in keyof T]: Promise<T[K]> },
): Promise<T> {
  const settled = await Promise.allSettled(reads);
  const failed = settled.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** What one Apply did: its plan and the state read back. */
export interface ApplyReport {
  plan: string[];
  result: State | undefined;
  /** Apply calls made: more than 1 when a NIC was still being hot-plugged. */
  attempts: number;
  /** What of the pod the guest did not get, one line each (what, then why): the mirror is incomplete. */
  notMirrored: string[];
}

export type PodReport = { rules: OnceReport["rules"] } & (
  | { kind: "apply"; apply: ApplyReport }
  | { kind: "kata"; sync: SyncReport; missed: string[] }
);

/**
 * The one-shot sync: with the pod's whole state and an agent that offers
 * netagent.v1.Network (probed once with Get), one Apply (exact); otherwise
 * the Kata sequence ({@link syncOnce}), with the list of what it could not
 * carry. The packet filter follows either way.
 */
export async function syncPod(
  client: AgentClient,
  pod: PodState,
  options: SyncOptions & {
    kata?: boolean;
    /**
     * The guest's state as this caller's last Apply read it back, when
     * nothing but that Apply has changed the guest since as far as the
     * caller knows (the same connection, the check after it equal): the
     * Get that would ask for it is saved. The guest's MACs and sysctls
     * come from it; should the guest have drifted, the check after this
     * sync says so.
     */
    guest?: State;
  },
): Promise<PodReport> {
  const full = options.kata ? undefined : pod.full;
  if (full && !options.guest) options.progress?.update("probing netagent.v1.Network (Get)");
  const guest = full
    ? (options.guest ?? (await probeNetwork(client, options.timeoutMs)))
    : undefined;
  if (!full || !guest) {
    const once = await syncOnce(client, pod, options);
    return {
      kind: "kata",
      sync: once.sync,
      rules: once.rules,
      missed: pod.full ? notMirrored(pod.full) : [],
    };
  }
  options.progress?.update("Apply");
  const { request, leftOut } = applyRequestFor(full, guest, await readFreshDefaults());
  // Apply answers "Link not found" at once for a NIC not hot-plugged yet:
  // retried as the runtime retries UpdateInterface.
  const { value: answer, attempts } = await retry(
    () => client.unary(Network.method.apply, request, { timeoutMs: options.timeoutMs }),
    isLinkNotFound,
    options.retry ?? KATA_RETRY,
    {
      ...options.hooks,
      onRetry: (attempt, err, ms) =>
        options.progress?.update(
          `Apply attempt ${attempt}: ${(err as Error).message}; retry in ${ms} ms`,
        ),
    },
  );
  const refused = answer.leftOut.map(
    (l) => `${describeField(request.desired, l.field)}: the guest refused it: ${l.reason}`,
  );
  const apply = {
    plan: answer.plan,
    result: answer.result,
    attempts,
    notMirrored: [...leftOut, ...refused],
  };
  if (pod.rules === undefined)
    return { kind: "apply", apply, rules: { skipped: "not read (no pod netns)" } };
  options.progress?.update("SetIPTables");
  const rules = await mirrorRules(client, pod.rules, { timeoutMs: options.timeoutMs });
  options.progress?.clear();
  return { kind: "apply", apply, rules };
}

/** Drives the agent with `pod`: the Kata sequence, then the packet filter. Throws the first failure. */
async function syncOnce(
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
