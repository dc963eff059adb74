/**
 * THE list of what legitimately differs between a pod and its mirror: the
 * one place the comparison (normalise.ts) leaves anything out. Each entry
 * says what and why; test/podgen/ignore.test.ts shows each one really
 * differs between two netns that carry the same configuration (or shows the
 * kernel making it by itself). Anything not listed here is compared.
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

export interface Ignored {
  kind: Kind;
  what: string;
  why: string;
  /** Top-level fields dropped from every object of the kind. */
  fields?: readonly string[];
}

export const IGNORED = {
  linkIndex: {
    kind: "link",
    what: "ifindex, link_index, link, link_netnsid",
    fields: ["ifindex", "link_index", "link", "link_netnsid"],
    why: "numbers the kernel assigns in creation order; a veth's peer (link, link_netnsid) lives in another netns on each side, and a guest's NIC has no peer at all",
  },
  linkDevice: {
    kind: "link",
    what: "linkinfo and the device's own limits and queues",
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
    ],
    why: "the guest's NIC is another device (virtio-net in a VM; a veth of another netns here): its driver (kind), queue counts and offload limits belong to the device, and nothing a pod configures sets them",
  },
  linkQdisc: {
    kind: "link",
    what: "qdisc",
    fields: ["qdisc"],
    why: "the device's default queueing discipline (noqueue on a veth, fq_codel or mq on other devices); traffic control is not network configuration the mirror carries",
  },
  linkCarrier: {
    kind: "link",
    what: "operstate and the carrier flags LOWER_UP, NO-CARRIER, M-DOWN",
    fields: ["operstate"],
    why: "carrier is the other end of the wire's (a veth's peer, a bridge's ports, the VMM holding a tap), not the link's configuration: a pod's bridge without ports has none, the guest's NIC has it; UP itself is compared",
  },
  addressLifetimes: {
    kind: "address",
    what: "valid_life_time, preferred_life_time (compared as forever / finite / 0 instead)",
    why: "the kernel counts the remaining seconds down, so a mirror made later shows other numbers; whether a lifetime is forever, finite or 0 (deprecated) is compared",
  },
  addressTentative: {
    kind: "address",
    what: "the tentative flag",
    why: "duplicate address detection in progress: it clears by itself a second or so after the address is added (never on a link without carrier)",
  },
  addressGuestNodad: {
    kind: "address",
    what: "nodad on the guest's address where the pod's has none",
    why: "the agent adds addresses with nodad so they are usable at once (a documented difference: docs/netagent-v1.md); a pod's nodad that the guest lacks is still a difference",
  },
  addressKernelLinkLocal: {
    kind: "address",
    what: "fe80::/64 addresses with an EUI-64 interface id (..ff:fe..)",
    why: "the kernel makes it when IPv6 comes up on the link, from the MAC the link had then (a pod's veth often gets its MAC after it came up); nothing configures it. Link-locals a pod adds itself are compared",
  },
  routeKernelLinkLocal: {
    kind: "route",
    what: "table local's route of a kernel link-local address (above)",
    why: "the kernel's route for the address the entry above leaves out",
  },
  routeCarrier: {
    kind: "route",
    what: "the route flags linkdown and dead (of a route and of its hops)",
    why: "they say the link has no carrier (linkCarrier)",
  },
  routeCarrierOnly: {
    kind: "route",
    what: "table local's IPv6 routes the kernel makes (multicast ff00::/8, anycast, local) on a link with carrier on that side only",
    why: "IPv6 comes up on a link with carrier: without it the kernel makes no multicast route there and keeps its addresses tentative, with no local route (linkCarrier)",
  },
  routeExpires: {
    kind: "route",
    what: "expires (compared as present or not)",
    why: "the remaining seconds count down",
  },
  neighbourLearned: {
    kind: "neighbour",
    what: "entries in the states REACHABLE, STALE, DELAY, PROBE, INCOMPLETE, FAILED, NONE",
    why: "learned from traffic and aged by the kernel; only PERMANENT and NOARP entries and proxy entries are configuration",
  },
  neighbourKernelMulticast: {
    kind: "neighbour",
    what: "NOARP entries for multicast addresses (ff00::/8, 224.0.0.0/4)",
    why: "the kernel makes them when it sends to a group (MLD reports, DAD) and maps the MAC from the group address",
  },
  neighbourNoarpLink: {
    kind: "neighbour",
    what: "NOARP entries on a NOARP link whose lladdr is the link's own MAC",
    why: "the kernel resolves every destination of a link without ARP/ND as the link itself and keeps the entry (seen for the peer's link-local); configuring one there changes nothing",
  },
  lookupLinkLocalAnyLink: {
    kind: "lookup",
    what: "the device a lookup of a link-local or multicast destination without oif picks (counted as agreeing when type and table agree)",
    why: "such an address means something only with an interface; the kernel picks among the equal fe80::/64 (ff00::/8) routes of every link the one inserted first, when its link came up, an order a mirror made later does not repeat",
  },
  lookupCarrierOnly: {
    kind: "lookup",
    what: "a lookup one side answers with a route of routeCarrierOnly (multicast, anycast or local of table local on a link with carrier there only)",
    why: "the route exists on one side only because of carrier (routeCarrierOnly)",
  },
  lookupSourceOtherLink: {
    kind: "lookup",
    what: "the preferred source of a lookup when both sides' are what the kernel picks by the order of links (the rest of the answer compared): IPv4 through a link with no primary address of global scope (oif net1 without IPv4, oif lo), each the first primary address not of link or host scope of another link; IPv6, each on another link than the answer's, the two equal under every rule of the kernel's ranking",
    why: "the kernel takes the source of the first link in the order the links were made: the guest's NICs are the hypervisor's, its tun devices the agent's, made after them",
  },
  lookupSourceMultipathHop: {
    kind: "lookup",
    what: "the preferred source of a lookup through a hop of an IPv6 multipath route other than its first, the guest's the route's listed source (or none, for an input lookup), the pod's one of its addresses or none",
    why: "a hop appended with `ip -6 route append` keeps its own source or none; the listings show the first hop's for the whole route, so a mirror gives every hop that one",
  },
  lookupKernelLinkLocalSource: {
    kind: "lookup",
    what: "a lookup's prefsrc when both sides answer with a kernel link-local",
    why: "each side's kernel link-local came from the MAC its link had when IPv6 came up (addressKernelLinkLocal), so a source picked among them differs; type, device, gateway and table are still compared",
  },
} satisfies Record<string, Ignored>;

export const LEARNED_STATES = new Set([
  "REACHABLE",
  "STALE",
  "DELAY",
  "PROBE",
  "INCOMPLETE",
  "FAILED",
  "NONE",
]);

/** An fe80::/64 address whose interface id has the EUI-64 ff:fe in its middle. */
export function isKernelLinkLocal(local: string, prefixlen?: number): boolean {
  if (prefixlen !== undefined && prefixlen !== 64) return false;
  const [g0, g1, g2, g3, , g5 = 0, g6 = 0] = expandV6(local) ?? [];
  if (g0 !== 0xfe80 || g1 || g2 || g3) return false;
  return (g5 & 0xff) === 0xff && g6 >> 8 === 0xfe;
}

export function isMulticast(addr: string): boolean {
  if (addr.includes(":")) return /^ff/i.test(addr);
  const first = Number(addr.split(".")[0]);
  return first >= 224 && first <= 239;
}

/** The eight 16-bit groups of an IPv6 address, or undefined. */
export function expandV6(addr: string): number[] | undefined {
  const [head, tail, extra] = addr.split("::");
  if (extra !== undefined) return undefined;
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const all = [...h, ...Array(fill).fill("0"), ...t];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  return all.map((g) => Number.parseInt(g, 16));
}

/** The carrier flags of a link (IGNORED.linkCarrier) and a route's (IGNORED.routeCarrier). */
export const CARRIER_FLAGS = new Set(["LOWER_UP", "NO-CARRIER", "M-DOWN", "linkdown", "dead"]);
