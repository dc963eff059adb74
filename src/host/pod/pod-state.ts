/**
 * Reads a pod's network namespace completely, for netagent.v1: links,
 * routes of every table, rules of both families, permanent neighbours, and
 * the allowed sysctls (src/net/sysctl/sysctl-keys.ts) whose value differs from
 * what a fresh namespace on this host has. The defaults come from a
 * throwaway namespace (`unshare --net`: made for one `sysctl` process and
 * gone with it). Values are read with procps `sysctl` run inside the
 * namespace, since /proc/sys/net shows the reader's own namespace.
 */

import { IpRunner } from "../../net/iproute/ip-runner";
import type { FullState, Sysctl } from "../../net/model/full-state";
import type { NetState } from "../../net/model/model";
import {
  DERIVED,
  normaliseSysctlValue,
  parseSysctlKey,
  setsEveryLink,
  sysctlPart,
  UNREADABLE_UNTIL_SET,
} from "../../net/sysctl/sysctl-keys";
import { isManagedLink, LOOPBACK } from "../../net/vocabulary/links";
import { commandArgv } from "../../process/command";
import { runProcess } from "../../process/run-process";

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

/** Parses `sysctl -a` output ("key = value" lines). */
function parseSysctlDump(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const i = line.indexOf(" = ");
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 3));
  }
  return out;
}

/** How long one `sysctl -a` may run (it reads a few hundred files) before it is killed. */
const SYSCTL_READ_MS = 30_000;

async function runText(argv: string[], netns?: string): Promise<string> {
  const command = netns === undefined ? { argv } : { argv, netns };
  const { stop, stdout, stderr } = await runProcess({ ...command, timeoutMs: SYSCTL_READ_MS });
  const what = commandArgv(command).join(" ");
  if (stop.kind === "not-started") throw new Error(`${what}: ${stop.error.message}`);
  if (stop.kind === "timed-out") {
    throw new Error(`${what}: killed (SIGKILL) after ${stop.ms} ms without finishing`);
  }
  if (stop.kind !== "exited") throw new Error(`${what}: stopped (${stop.kind})`);
  const out = new TextDecoder().decode(stdout);
  // sysctl -a exits non-zero when a key refuses reads (stable_secret): the rest is good.
  if (stop.code !== 0 && out === "") {
    throw new Error(`${what}: ${stderr.trim() || `exit ${stop.code}`}`);
  }
  return out;
}

const DUMP = ["sysctl", "-a", "-r", "^net\\."];

/** The net.* sysctls of a namespace (a name under /run/netns or a path). */
async function readNetnsSysctls(netns: string): Promise<Map<string, string>> {
  return parseSysctlDump(await runText(DUMP, netns));
}

let defaultsCache: Promise<Map<string, string>> | undefined;

/** The net.* sysctls of a fresh namespace on this host (read once per process). */
export function readFreshDefaults(): Promise<Map<string, string>> {
  defaultsCache ??= runText(["unshare", "--net", "--", ...DUMP]).then(parseSysctlDump);
  return defaultsCache;
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
 * routes and neighbours as readPodRequests reads them (one read for both).
 */
export async function readPodWhole(
  netns: string,
  ipBinary?: string,
): Promise<{ full: PodFullState; net: NetState }> {
  const [both, values, fresh] = await Promise.all([
    new IpRunner({ binary: ipBinary, netns }).readFullAndState(),
    readNetnsSysctls(netns),
    readFreshDefaults(),
  ]);
  return { full: withSysctls(both.full, values, fresh), net: both.state };
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
