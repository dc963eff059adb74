/**
 * The sysctls the agent may read and write: the one place that says which.
 *
 * Only keys that live in a network namespace, so a guest (or a pod) has its
 * own copy and writing one changes that namespace alone:
 * - per interface (and its `all` / `default` entries), every key of
 *   net.ipv4.conf.IF, net.ipv6.conf.IF, net.ipv4.neigh.IF, net.ipv6.neigh.IF
 *   (devinet, addrconf and neighbour tables are per netns);
 * - the namespaced net.* keys that Kubernetes lists as safe sysctls and that
 *   the CNI `tuning` plugin is used for (listed in {@link NAMESPACED_KEYS};
 *   each checked to exist under /proc/sys/net in a fresh namespace).
 * A key maps to a path below /proc/sys/net and nowhere else: interface names
 * are link names (no "/", never "." or ".."), the last part is [a-z0-9_].
 * Keys are written as sysctl(8) names them: the path's "/" as ".", and a
 * "." inside a part as "/" (`net.ipv4.conf.vnic/a-b_c.rp_filter` is
 * /proc/sys/net/ipv4/conf/vnic.a-b_c/rp_filter); a key that spells the
 * link's dots as dots is taken too, and named the sysctl(8) way.
 * Keys the kernel derives from something else are left out of reads
 * ({@link DERIVED}): net.ipv6.conf.IF.mtu follows the link's MTU (a pod
 * that set it apart from the MTU has it mirrored: src/host/pod/pod-state.ts).
 */

export const SYSCTL_ROOT = "/proc/sys/net";

/** Non-interface keys, namespaced since Linux 4.x–5.x (Kubernetes safe set + tuning's usual ones). */
export const NAMESPACED_KEYS: readonly string[] = [
  // Kubernetes safe sysctls (all network-namespaced)
  "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.ping_group_range",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_rmem",
  "net.ipv4.tcp_wmem",
  // what CNI tuning configurations commonly set
  "net.core.somaxconn",
  "net.ipv4.ip_forward",
  "net.ipv4.ip_nonlocal_bind",
  "net.ipv4.ip_default_ttl",
  "net.ipv4.ip_no_pmtu_disc",
  "net.ipv4.fwmark_reflect",
  "net.ipv4.tcp_fwmark_accept",
  "net.ipv4.fib_multipath_hash_policy",
  "net.ipv4.fib_multipath_use_neigh",
  "net.ipv4.icmp_echo_ignore_all",
  "net.ipv4.icmp_echo_ignore_broadcasts",
  "net.ipv4.tcp_max_syn_backlog",
  "net.ipv4.tcp_tw_reuse",
  "net.ipv4.tcp_timestamps",
  "net.ipv4.tcp_sack",
  "net.ipv4.tcp_mtu_probing",
  "net.ipv4.tcp_ecn",
  "net.ipv6.fwmark_reflect",
  "net.ipv6.fib_multipath_hash_policy",
  "net.ipv6.ip_nonlocal_bind",
  "net.unix.max_dgram_qlen",
];

const NAMESPACED = new Set(NAMESPACED_KEYS);

/** The per-interface trees: key prefix and the directory under /proc/sys/net. */
export const PER_INTERFACE = [
  { prefix: "net.ipv4.conf.", dir: "ipv4/conf" },
  { prefix: "net.ipv6.conf.", dir: "ipv6/conf" },
  { prefix: "net.ipv4.neigh.", dir: "ipv4/neigh" },
  { prefix: "net.ipv6.neigh.", dir: "ipv6/neigh" },
] as const;

/** Keys the kernel derives from other state: not read as differences. */
export const DERIVED = new Set(["net.ipv6.conf.*.mtu"]);

/**
 * Namespace-wide keys whose write sets every link's value of a
 * per-interface key (and the default's), by that key's pattern (checked in
 * a netns; other `all` keys combine with the link's value when used).
 */
const SETS_EVERY_LINK: ReadonlyMap<string, string> = new Map([
  ["net.ipv4.ip_forward", "net.ipv4.conf.*.forwarding"],
  ["net.ipv4.conf.all.forwarding", "net.ipv4.conf.*.forwarding"],
  ["net.ipv6.conf.all.forwarding", "net.ipv6.conf.*.forwarding"],
  ["net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.*.disable_ipv6"],
]);

const IPV4_DEFAULT = "net.ipv4.conf.default.";

/**
 * The per-interface pattern whose links' values a write of `key` sets as
 * well ({@link SETS_EVERY_LINK}; and an IPv4 `default` key but forwarding,
 * which the kernel copies to every link that never had an IPv4 address
 * nor that key written), or undefined. Checked in a netns; IPv6's
 * `default` keys apply to links made later only.
 */
export function setsEveryLink(key: string): string | undefined {
  const wide = SETS_EVERY_LINK.get(key);
  if (wide !== undefined) return wide;
  if (!key.startsWith(IPV4_DEFAULT) || key === `${IPV4_DEFAULT}forwarding`) return undefined;
  const leaf = key.slice(IPV4_DEFAULT.length);
  return LEAF.test(leaf) ? `net.ipv4.conf.*.${leaf}` : undefined;
}

/**
 * Keys whose read fails (EIO) until a value is written, so a namespace's
 * default cannot be read: a value read is one that was set. A link's
 * stable_secret (it makes the link's addresses stable-privacy ones).
 */
export const UNREADABLE_UNTIL_SET = new Set(["net.ipv6.conf.*.stable_secret"]);

const LEAF = /^[a-z0-9_]{1,64}$/;
/** A link name as the kernel takes it (15 bytes, no "/"), or all/default. */
const IFACE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$/;

/** Whether a directory name under conf/ or neigh/ is a link name a key can name (or all/default). */
export const isSysctlIface = (name: string) => IFACE.test(name);
/** Whether a file name there is a key's last part. */
export const isSysctlLeaf = (name: string) => LEAF.test(name);

/** A link name as a part of a sysctl(8) name: its dots as "/". */
export function sysctlPart(iface: string): string {
  return iface.replaceAll(".", "/");
}

export interface SysctlKey {
  /** As sysctl(8) names it (the link's dots as "/"), whichever way it was given. */
  key: string;
  /** Absolute path below /proc/sys/net. */
  path: string;
  /** The link name a per-interface key is about ("all", "default" included); undefined for the others. */
  iface?: string;
  /** The key with the interface replaced by "*", e.g. "net.ipv4.conf.*.rp_filter". */
  pattern: string;
}

/** The same per-interface key for another interface (`key` itself for the others). */
export function sysctlKeyFor(k: SysctlKey, iface: string): string {
  return k.iface === undefined ? k.key : k.pattern.replace("*", sysctlPart(iface));
}

/** The rule itself, for the refusal: a user of the agent has no source to look it up in. */
const NOT_MANAGED = `is not a network-namespaced sysctl this agent manages: it takes ${PER_INTERFACE.map(
  (t) => `${t.prefix}IFACE.KEY`,
).join(", ")} (IFACE a link name, "all" or "default") and the keys ${NAMESPACED_KEYS.join(", ")}`;

/** Maps a key to its path, or returns why it is not allowed. */
export function parseSysctlKey(key: string): SysctlKey | string {
  if (key.length > 128) return "is longer than 128 characters";
  if (NAMESPACED.has(key)) {
    return { key, path: `${SYSCTL_ROOT}/${key.slice(4).replaceAll(".", "/")}`, pattern: key };
  }
  for (const { prefix, dir } of PER_INTERFACE) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const dot = rest.lastIndexOf(".");
    // sysctl(8) spells a link's dots as "/"; a link name has no "/" of its own.
    const iface = rest.slice(0, dot).replaceAll("/", ".");
    const leaf = rest.slice(dot + 1);
    if (dot < 0 || !IFACE.test(iface) || !LEAF.test(leaf)) {
      return `is not ${prefix}IFACE.KEY with IFACE a link name (its dots written "/" as sysctl(8) does, or as dots), "all" or "default"`;
    }
    return {
      key: `${prefix}${sysctlPart(iface)}.${leaf}`,
      path: `${SYSCTL_ROOT}/${dir}/${iface}/${leaf}`,
      iface,
      pattern: `${prefix}*.${leaf}`,
    };
  }
  return NOT_MANAGED;
}

/** Checks a value: one line of printable text, at most 256 bytes. Returns a reason or undefined. */
export function sysctlValueProblem(value: string): string | undefined {
  if (value.length > 256) return "is longer than 256 characters";
  if (!/^[A-Za-z0-9 \t._:,/+-]*$/.test(value)) return "has characters a sysctl value cannot have";
  return undefined;
}

/** How the kernel prints a value vs how it was written: tabs and runs of spaces are one separator. */
export function normaliseSysctlValue(value: string): string {
  return value.trim().split(/\s+/).join(" ");
}
