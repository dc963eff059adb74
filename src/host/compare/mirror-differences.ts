/**
 * THE list of what legitimately differs between a pod and its mirror in a
 * complete read (complete-diff.ts leaves out this and nothing else). Each
 * entry says what and why; test/unit/mirror-differences.test.ts shows each
 * one left out and its neighbours still compared, and
 * test/netns/mirror-differences.test.ts shows the kernel making each
 * difference by itself between two namespaces configured alike.
 * docs/diff.md prints this list.
 */

export type Kind =
  | "link"
  | "address"
  | "route"
  | "rule"
  | "neighbour"
  | "nexthop"
  | "sysctl"
  | "lookup";

export interface MirrorDifference {
  kind: Kind;
  what: string;
  why: string;
  /** Top-level fields left out of every object of the kind. */
  fields?: readonly string[];
  /** Flags left out of a `flags` list. */
  flags?: readonly string[];
  /** Sysctl files (below /proc/sys/net) left out. */
  paths?: readonly string[];
}

export const MIRROR_DIFFERENCES = {
  linkIndex: {
    kind: "link",
    what: "ifindex, and a link's references to other links by index or to their namespace (link_index, link_netnsid, link: a veth's peer)",
    fields: ["ifindex", "link_index", "link_netnsid", "link"],
    why: "the kernel numbers links in the order they are made; a pod's veth has its peer in the host's namespace, the guest's NIC has its other end in the VMM",
  },
  linkDevice: {
    kind: "link",
    what: "the device type and its device-specific fields: linkinfo (veth, none for virtio), the MTU range, queue counts, offload limits, bus and parent device, the permanent MAC",
    fields: [
      "linkinfo",
      "min_mtu",
      "max_mtu",
      "num_tx_queues",
      "num_rx_queues",
      "gso_max_size",
      "gso_max_segs",
      "tso_max_size",
      "tso_max_segs",
      "gro_max_size",
      "gso_ipv4_max_size",
      "gro_ipv4_max_size",
      "parentbus",
      "parentdev",
      "permaddr",
      "phys_port_id",
      "phys_port_name",
      "phys_switch_id",
    ],
    why: "the guest's NIC is virtio-net (or a tap) where the pod has a veth: the driver decides these, nothing a pod configures sets them",
  },
  linkQdisc: {
    kind: "link",
    what: "qdisc",
    fields: ["qdisc"],
    why: "each device's default queueing discipline (noqueue on a veth, fq_codel or mq on virtio-net); traffic control is not what the mirror carries",
  },
  linkCarrier: {
    kind: "link",
    what: "operstate and the carrier flags LOWER_UP, NO-CARRIER, M-DOWN",
    fields: ["operstate"],
    flags: ["LOWER_UP", "NO-CARRIER", "M-DOWN"],
    why: "carrier is the other end of the wire's (the veth's peer, the VMM's backend), not the link's configuration; UP itself is compared",
  },
  addressLifetimes: {
    kind: "address",
    what: "valid_life_time and preferred_life_time as numbers (compared as forever, finite or 0)",
    why: "the kernel counts the remaining seconds down, so a mirror made later shows other numbers; forever, finite and 0 (deprecated) are compared",
  },
  addressTentative: {
    kind: "address",
    what: "the tentative flag",
    fields: ["tentative"],
    why: "duplicate address detection under way: it clears by itself about a second after the address is added",
  },
  addressGuestNodad: {
    kind: "address",
    what: "nodad on the guest's address where the pod's has none",
    why: "the agent adds IPv6 addresses with nodad so they are usable at once; a pod's nodad the guest lacks is still a difference, and on a link that is down nodad is carried as the pod has it (usable with its local route, or tentative)",
  },
  addressKernelLinkLocal: {
    kind: "address",
    what: "the kernel's own link-local addresses: fe80::/64 with an EUI-64 interface id (..ff:fe..)",
    why: "the kernel makes one when IPv6 comes up on a link, from the MAC it had then; nothing configures it (link-locals a pod adds itself are compared, and the model comparison checks the pod's are in the guest)",
  },
  routeKernelLinkLocal: {
    kind: "route",
    what: "table local's route of a kernel link-local address (above)",
    why: "the kernel's route for the address the entry above leaves out",
  },
  routeCarrierOnly: {
    kind: "route",
    what: "table local's IPv6 routes the kernel makes (multicast ff00::/8, anycast, local) on a link that has carrier on that side only (named in diff and sync as carrier's, not counted)",
    why: "IPv6 comes up on a link with carrier: without it the kernel makes no multicast route there and keeps its addresses tentative, with no local route; carrier is the other end of the wire's (a bridge's ports, the VMM holding a tap), which no agent can mirror",
  },
  routeExpires: {
    kind: "route",
    what: "expires as a number (compared as present or not)",
    fields: ["expires"],
    why: "the remaining seconds count down",
  },
  routeCarrier: {
    kind: "route",
    what: "the flags linkdown and dead of a route, its hops and nexthop objects",
    flags: ["linkdown", "dead"],
    why: "they say the link has no carrier (see linkCarrier)",
  },
  neighbourLearned: {
    kind: "neighbour",
    what: "entries in the states REACHABLE, STALE, DELAY, PROBE, INCOMPLETE, FAILED, NONE",
    why: "learned from traffic and aged by the kernel; PERMANENT and NOARP entries and proxy entries are configuration",
  },
  neighbourKernelMulticast: {
    kind: "neighbour",
    what: "NOARP entries of multicast addresses (ff00::/8, 224.0.0.0/4)",
    why: "the kernel makes them when it sends to a group (MLD reports, DAD) and maps their MAC from the group address",
  },
  neighbourNoarpLink: {
    kind: "neighbour",
    what: "NOARP entries on a link with the NOARP flag that hold the link's own address",
    why: "a link without ARP or neighbour discovery resolves every address it sends to as itself, and the kernel keeps an entry for each (the peer's link-local once IPv6 is up, any traffic); no entry configured there could say anything else",
  },
  sysctlOwnDefault: {
    kind: "sysctl",
    what: "a value at its own kernel's fresh-namespace value on both sides",
    why: "nobody configured it: the guest's kernel (another version, another machine's memory size) has its own defaults; a value set on either side is compared",
  },
  sysctlGlobal: {
    kind: "sysctl",
    what: "a file a fresh namespace of its kernel does not have (`net.core.bpf_jit_*`, `net.ipv4.route.*`, `tcp_mem`, `neigh/default/gc_thresh*`)",
    why: "the kernel's global settings, shown in the initial namespace alone: the guest's agent runs in its VM's initial namespace, a pod never is one; they are the machine's, not the pod's network",
  },
  sysctlReport: {
    kind: "sysctl",
    what: "the read-only files that report the kernel: ipv4/tcp_ehash_entries, tcp_available_congestion_control, tcp_available_ulp, netfilter/nf_conntrack_count",
    paths: [
      "ipv4/tcp_ehash_entries",
      "ipv4/tcp_available_congestion_control",
      "ipv4/tcp_available_ulp",
      "netfilter/nf_conntrack_count",
    ],
    why: "nothing configures them: the size of the connection hash (negative outside the initial namespace, which shares its own), what the kernel has built in or loaded, a count of tracked connections",
  },
  sysctlOneKernel: {
    kind: "sysctl",
    what: "a file only one side's kernel has, at its fresh-namespace value there",
    why: "the two kernels are built differently (version, modules loaded: `netfilter/*`); a value set there is still a difference",
  },
  lookupCache: {
    kind: "lookup",
    what: "cache of a route lookup's answer",
    fields: ["cache"],
    why: "exceptions the kernel learned from traffic (a path MTU, a redirect) that expire by themselves",
  },
  lookupSourceOtherLink: {
    kind: "lookup",
    what: "the preferred source of a lookup when the two sides' sources are both what the kernel's rule picks by the order of links (the rest of its answer compared): IPv4 through a link with no primary address of global scope (route get X oif net1, net1 without IPv4; oif lo), each side's source the first primary address, not of link or host scope, of another link; IPv6, each side's source on another link than the answer's, the two equal under every rule of the kernel's ranking (scope, deprecated, home, label, temporary, shared prefix); diff names the links without a source of their own",
    why: "the kernel then takes the source of the first link in the order the links were made: the guest's NICs are in the hypervisor's order, its tun devices made by the agent after them, neither of which sync decides",
  },
  lookupSourceMultipathHop: {
    kind: "lookup",
    what: "the preferred source of a lookup through a hop of an IPv6 multipath route other than its first, where the guest's is the source the route is listed with (none, for an input lookup of a route listed without) and the pod's one of its own addresses or none",
    why: "a hop appended to an IPv6 route (ip -6 route append) keeps a source of its own, or none; every listing of the route shows the first hop's for the whole route, so a mirror gives every hop that one",
  },
  lookupKernelLinkLocalSource: {
    kind: "lookup",
    what: "a lookup's prefsrc when each side picks a kernel link-local (addressKernelLinkLocal)",
    why: "each kernel made its own link-locals from the MAC its link had when IPv6 came up, so the source it picks among them differs; the route, device, type and table picked are compared, and so is any other source",
  },
} satisfies Record<string, MirrorDifference>;

/** Neighbour states the kernel learns (MIRROR_DIFFERENCES.neighbourLearned). */
export const LEARNED_STATES = new Set([
  "REACHABLE",
  "STALE",
  "DELAY",
  "PROBE",
  "INCOMPLETE",
  "FAILED",
  "NONE",
]);

/** The eight 16-bit groups of an IPv6 address, or undefined. */
function groups(addr: string): number[] | undefined {
  const [head, tail, extra] = addr.split("::");
  if (extra !== undefined) return undefined;
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  if (fill < 0) return undefined;
  const all = [...h, ...Array<string>(fill).fill("0"), ...t];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  return all.map((g) => Number.parseInt(g, 16));
}

/** fe80::/64 with an EUI-64 interface id (MIRROR_DIFFERENCES.addressKernelLinkLocal). */
export function isKernelLinkLocal(addr: string, prefixlen?: number): boolean {
  if (prefixlen !== undefined && prefixlen !== 64) return false;
  const g = groups(addr);
  if (g === undefined || g[0] !== 0xfe80 || g[1] || g[2] || g[3]) return false;
  return ((g[5] as number) & 0xff) === 0xff && (g[6] as number) >> 8 === 0xfe;
}

/** A multicast address of either family (MIRROR_DIFFERENCES.neighbourKernelMulticast). */
export function isMulticast(addr: string): boolean {
  if (addr.includes(":")) return /^ff/i.test(addr);
  const first = Number(addr.split(".")[0]);
  return first >= 224 && first <= 239;
}
