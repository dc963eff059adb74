/**
 * Reads a pod's network namespace completely, for netagent.v1: links,
 * routes of every table, rules of both families, permanent neighbours, and
 * the allowed sysctls (src/net/sysctl/sysctl-keys.ts) whose value differs from
 * what a fresh namespace on this host has. The defaults come from a
 * throwaway namespace (`unshare --net`: made for one `grep` process and
 * gone with it). Values are read by a `grep` over /proc/sys/net run inside
 * the namespace, since /proc/sys/net shows the reader's own namespace
 * (src/net/sysctl/sysctl-grep.ts, the complete comparison's read too).
 */

import { IpRunner } from "../../net/iproute/ip-runner";
import type { FullState, Sysctl } from "../../net/model/full-state";
import type { NetState } from "../../net/model/model";
import { readFreshSysctlTree, readNetnsSysctlTree } from "../../net/sysctl/sysctl-grep";
import {
  DERIVED,
  normaliseSysctlValue,
  parseSysctlKey,
  setsEveryLink,
  sysctlPart,
  UNREADABLE_UNTIL_SET,
} from "../../net/sysctl/sysctl-keys";
import { isManagedLink, LOOPBACK } from "../../net/vocabulary/links";

/** Keys whose default the kernel sizes by the machine's memory: a guest's differ by design. */
const MEMORY_SIZED = new Set([
  "net.ipv4.tcp_rmem",
  "net.ipv4.tcp_wmem",
  "net.ipv4.tcp_max_syn_backlog",
]);

export interface PodFullState extends Omit<FullState, "sysctls"> {
  /** The allowed sysctls that differ from the host's defaults, in key order. */
  sysctls: Sysctl[];
  /** Every allowed sysctl the pod has, for comparisons. */
  allSysctls: Map<string, string>;
}

/**
 * Leaves procps sysctl(8) leaves out of `sysctl -a` as deprecated: each is
 * its `_ms` twin in other units, and writing both could undo the finer one.
 */
const DEPRECATED_LEAVES = new Set(["base_reachable_time", "retrans_time"]);

/**
 * Files below /proc/sys/net (sysctl-grep.ts: path to content) by their
 * sysctl(8) key: "ipv4/conf/eth0.5/rp_filter" is "net.ipv4.conf.eth0/5.rp_filter".
 */
export function sysctlKeys(tree: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, value] of tree) {
    const parts = path.split("/");
    if (DEPRECATED_LEAVES.has(parts[parts.length - 1] as string)) continue;
    out.set(`net.${parts.map(sysctlPart).join(".")}`, value);
  }
  return out;
}

/**
 * The net.* sysctls of a namespace (a name under /run/netns or a path):
 * one `grep` over its /proc/sys/net, a fraction of `sysctl -a`'s cost
 * (bench/README.md).
 */
async function readNetnsSysctls(netns: string): Promise<Map<string, string>> {
  return sysctlKeys(await readNetnsSysctlTree(netns));
}

/** Each fresh tree keyed once (readFreshSysctlTree keeps one per process, and retries a failed read). */
const keyed = new WeakMap<ReadonlyMap<string, string>, Map<string, string>>();

/**
 * The net.* sysctls of a fresh namespace on this host (read once per
 * process, the complete comparison's read, and keyed once: every sync asks).
 */
export async function readFreshDefaults(): Promise<Map<string, string>> {
  const tree = await readFreshSysctlTree();
  let keys = keyed.get(tree);
  if (keys === undefined) {
    keys = sysctlKeys(tree);
    keyed.set(tree, keys);
  }
  return keys;
}

/**
 * The fresh-namespace default for an allowed key: for an interface, its
 * `default` entry (conf) or the loopback's (neigh: a new namespace has no
 * neigh.default); undefined when there is nothing to compare with.
 */
export function defaultFor(key: string, fresh: ReadonlyMap<string, string>): string | undefined {
  const k = parseSysctlKey(key);
  if (typeof k === "string") return undefined;
  if (k.iface === undefined || k.iface === "all" || k.iface === "default") return fresh.get(key);
  const base = k.pattern.includes(".neigh.") ? LOOPBACK : "default";
  return fresh.get(k.pattern.replace("*", base));
}

/** Whether a key is compared at all (not derived from other state, not sized by memory). */
export function comparable(key: string): boolean {
  const k = parseSysctlKey(key);
  return typeof k !== "string" && !DERIVED.has(k.pattern) && !MEMORY_SIZED.has(key);
}

/** A link's IPv6 MTU, kept apart from the link's MTU only when it was set apart. */
const IPV6_MTU = "net.ipv6.conf.*.mtu";

/**
 * The allowed keys of `values` that differ from the fresh defaults. A
 * link's IPv6 MTU follows its MTU (setting the MTU sets it), so it counts
 * only where it is not the link's MTU (`linkMtus`): then the pod set it
 * apart, and Apply writes it after the link's MTU.
 */
function nonDefaultSysctls(
  values: ReadonlyMap<string, string>,
  fresh: ReadonlyMap<string, string>,
  ifaces: readonly string[],
  linkMtus: ReadonlyMap<string, number> = new Map(),
): Sysctl[] {
  const out: Sysctl[] = [];
  for (const [key, value] of values) {
    const k = parseSysctlKey(key);
    if (typeof k === "string") continue;
    if (k.pattern === IPV6_MTU && k.iface !== undefined && ifaces.includes(k.iface)) {
      const mtu = linkMtus.get(k.iface);
      if (mtu !== undefined && normaliseSysctlValue(value) !== String(mtu)) {
        out.push({ key, value: normaliseSysctlValue(value) });
      }
      continue;
    }
    if (!comparable(key)) continue;
    if (k.iface !== undefined && !["all", "default", ...ifaces].includes(k.iface)) continue;
    const def = defaultFor(key, fresh);
    const isDefault =
      def === undefined
        ? !UNREADABLE_UNTIL_SET.has(k.pattern)
        : normaliseSysctlValue(def) === normaliseSysctlValue(value);
    if (isDefault) continue;
    out.push({ key, value: normaliseSysctlValue(value) });
  }
  return withEveryLink(out, values, ifaces).sort((a, b) => a.key.localeCompare(b.key));
}

/**
 * `out` and, for each key in it whose write sets every link's value as
 * well (setsEveryLink: forwarding for the namespace, IPv6's disable_ipv6,
 * an IPv4 default), that key of each link and of `default` as the pod has
 * it, default or not: the guest writes that key first, and a link the pod
 * set back must be set back there too.
 */
function withEveryLink(
  out: Sysctl[],
  values: ReadonlyMap<string, string>,
  ifaces: readonly string[],
): Sysctl[] {
  const listed = new Set(out.map((s) => s.key));
  for (const s of [...out]) {
    const pattern = setsEveryLink(s.key);
    if (pattern === undefined) continue;
    for (const iface of ["default", ...ifaces]) {
      const key = pattern.replace("*", sysctlPart(iface));
      const value = values.get(key);
      if (value === undefined || listed.has(key)) continue;
      listed.add(key);
      out.push({ key, value: normaliseSysctlValue(value) });
    }
  }
  return out;
}

/** Reads the pod namespace `netns` (a resolved name or path) completely. */
export async function readPodFullState(netns: string, ipBinary?: string): Promise<PodFullState> {
  return (await readPodWhole(netns, ipBinary)).full;
}

/**
 * The pod's whole state and, from the same listings, its links, main-table
 * routes and neighbours as readPodRequests reads them (one read for both);
 * `awaitingReady` when a link of the read is not yet ready (link-ready.ts).
 */
export async function readPodWhole(
  netns: string,
  ipBinary?: string,
): Promise<{ full: PodFullState; net: NetState; awaitingReady: boolean }> {
  const [both, values, fresh] = await Promise.all([
    new IpRunner({ binary: ipBinary, netns }).readFullAndState(),
    readNetnsSysctls(netns),
    readFreshDefaults(),
  ]);
  return {
    full: withSysctls(both.full, values, fresh),
    net: both.state,
    awaitingReady: both.awaitingReady,
  };
}

function withSysctls(
  state: Omit<FullState, "sysctls">,
  values: Map<string, string>,
  fresh: ReadonlyMap<string, string>,
): PodFullState {
  const ifaces = state.links.map((l) => l.name).filter(isManagedLink);
  const allSysctls = new Map([...values].filter(([k]) => typeof parseSysctlKey(k) !== "string"));
  const mtus = new Map(state.links.map((l) => [l.name, l.mtu]));
  return { ...state, sysctls: nonDefaultSysctls(allSysctls, fresh, ifaces, mtus), allSysctls };
}
