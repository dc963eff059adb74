/**
 * What `sync --watch` says: the pure comparison of two syncs' requests
 * (what changed in the pod), and the events the watch emits, rendered as
 * one text line each or one JSON object per line.
 */
import { createHash } from "node:crypto";
import type { Interface, Route } from "../../gen/types_pb";
import { normaliseRules } from "../../net/iptables/iptables-text";
import { NTF_ROUTER } from "../../net/vocabulary/links";
import type { SyncRequests } from "../pod/pod-requests";
import { addressWords, kataRouteView, neighborWords, routeWords } from "../print/words";
import type { PodState } from "../sync/sync-once";

/** What changed between two reads of the pod, as short printable items. */
export interface RequestChanges {
  interfacesAdded: string[];
  interfacesRemoved: string[];
  /** "eth0: +10.0.0.3/24 -10.0.0.2/24 mtu 1500->9000" */
  interfacesChanged: string[];
  routesAdded: string[];
  routesRemoved: string[];
  neighborsAdded: string[];
  neighborsRemoved: string[];
  /** The pod's packet filter changed. */
  rules: boolean;
  /** Something else a sync carries changed (fields this report does not itemise). */
  other: boolean;
}

/** A stable text of anything a sync reads (protobuf messages with bigints included). */
function requestsKey(r: unknown): string {
  return JSON.stringify(r, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
}

/** True when two reads would send exactly the same requests. */
export function sameRequests(a: SyncRequests, b: SyncRequests): boolean {
  return requestsKey(a) === requestsKey(b);
}

const describeRequestRoute = (r: Route): string => routeWords(kataRouteView(r));

const addrs = (i: Interface) => i.IPAddresses.map((a) => addressWords(a.address, a.mask));

function interfaceChange(a: Interface, b: Interface): string | undefined {
  const parts: string[] = [];
  if (a.name !== b.name) parts.push(`renamed ${a.name}->${b.name}`);
  const had = new Set(addrs(a));
  const has = new Set(addrs(b));
  for (const x of has) if (!had.has(x)) parts.push(`+${x}`);
  for (const x of had) if (!has.has(x)) parts.push(`-${x}`);
  if (a.mtu !== b.mtu) parts.push(`mtu ${a.mtu}->${b.mtu}`);
  if (a.rawFlags !== b.rawFlags) parts.push(`raw_flags ${a.rawFlags}->${b.rawFlags}`);
  return parts.length ? `${b.name}: ${parts.join(" ")}` : undefined;
}

function setDiff(before: string[], after: string[]): [string[], string[]] {
  const b = new Set(before);
  const a = new Set(after);
  return [after.filter((x) => !b.has(x)), before.filter((x) => !a.has(x))];
}

/** Pure: what changed from `before` (undefined: nothing synced yet) to `after`. */
export function diffRequests(
  before: SyncRequests | undefined,
  after: SyncRequests,
): RequestChanges {
  const prev = before ?? { interfaces: [], routes: [], neighbors: [], skipped: [] };
  const byMac = new Map(prev.interfaces.map((i) => [i.hwAddr, i]));
  const nowMacs = new Set(after.interfaces.map((i) => i.hwAddr));
  const changed: string[] = [];
  const added: string[] = [];
  for (const i of after.interfaces) {
    const old = byMac.get(i.hwAddr);
    if (!old) added.push(`${i.name} ${i.hwAddr}`);
    else {
      const c = interfaceChange(old, i);
      if (c) changed.push(c);
    }
  }
  const removed = prev.interfaces
    .filter((i) => !nowMacs.has(i.hwAddr))
    .map((i) => `${i.name} ${i.hwAddr}`);
  const [routesAdded, routesRemoved] = setDiff(
    prev.routes.map(describeRequestRoute),
    after.routes.map(describeRequestRoute),
  );
  const neigh = (r: SyncRequests) =>
    r.neighbors.map((n) =>
      neighborWords({
        ip: n.toIPAddress?.address ?? "",
        dev: n.device,
        lladdr: n.lladdr,
        router: (n.flags & NTF_ROUTER) !== 0,
      }),
    );
  const [neighborsAdded, neighborsRemoved] = setDiff(neigh(prev), neigh(after));
  const changes: RequestChanges = {
    interfacesAdded: added,
    interfacesRemoved: removed,
    interfacesChanged: changed,
    routesAdded,
    routesRemoved,
    neighborsAdded,
    neighborsRemoved,
    rules: false,
    other: false,
  };
  changes.other =
    before !== undefined && !sameRequests(before, after) && countChanges(changes) === 0;
  return changes;
}

/**
 * What a follower keeps of the pod it last sent: the requests (for the
 * itemised changes of the next sync) and digests of the rest. Not the
 * read itself: its strings can hold on to the whole outputs they were cut
 * from (`ip -j`, /proc/sys/net), about 0.2 MiB a pod (bench/README.md).
 */
export interface PodSeen {
  requests: SyncRequests;
  /** A digest of the packet filter, normalised (undefined: not read). */
  rules: string | undefined;
  /** A digest of everything a sync reads, the packet filter normalised. */
  whole: string;
}

const digest = (text: string) => createHash("sha256").update(text).digest("base64");

/**
 * A read of the pod kept as {@link PodSeen}: the rules normalised
 * (iptables-save dates its output and counts packets: every read would
 * differ), the full state's sysctls as entries (a Map has no JSON of its own).
 */
export function podSeen(p: PodState): PodSeen {
  const rules =
    p.rules && requestsKey({ 4: normaliseRules(p.rules[4]), 6: normaliseRules(p.rules[6]) });
  const whole = requestsKey({
    ...p,
    rules,
    full: p.full && { ...p.full, allSysctls: [...p.full.allSysctls] },
  });
  return { requests: p.requests, rules: rules && digest(rules), whole: digest(whole) };
}

/** True when two reads of the pod would make a sync send exactly the same. */
export function samePodState(a: PodSeen, b: PodSeen): boolean {
  return a.whole === b.whole;
}

/** Pure: what changed between two reads of the pod, the packet filter included. */
export function diffPodState(before: PodSeen | undefined, after: PodSeen): RequestChanges {
  const changes = diffRequests(before?.requests, after.requests);
  if (before === undefined) return changes;
  changes.rules = before.rules !== after.rules;
  // Beyond the Kata requests: routes of other tables, ip rules, sysctls, ...
  changes.other = !changes.rules && countChanges(changes) === 0 && before.whole !== after.whole;
  return changes;
}

/** The number of itemised changes. */
export function countChanges(c: RequestChanges): number {
  return (
    c.interfacesAdded.length +
    c.interfacesRemoved.length +
    c.interfacesChanged.length +
    c.routesAdded.length +
    c.routesRemoved.length +
    c.neighborsAdded.length +
    c.neighborsRemoved.length
  );
}
