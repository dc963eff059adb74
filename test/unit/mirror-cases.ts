/**
 * One case per entry of src/host/compare/mirror-differences.ts, for
 * mirror-differences.test.ts: a pod read and a guest read that differ in
 * exactly what the entry leaves out, and the guest with a neighbouring
 * difference the entry does not cover. The reads are hand-made pieces of
 * `ip -json` output (a veth as CNI makes it, a virtio NIC as the guest
 * has it).
 */

import type { CompleteRead, Json } from "../../src/host/compare/complete-read";
import type { MIRROR_DIFFERENCES } from "../../src/host/compare/mirror-differences";

export const veth: Json = {
  ifindex: 3,
  link: "veth1a2b",
  link_index: 12,
  link_netnsid: 0,
  ifname: "eth0",
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  mtu: 1500,
  qdisc: "noqueue",
  operstate: "UP",
  group: "default",
  txqlen: 1000,
  link_type: "ether",
  address: "02:00:00:00:00:01",
  broadcast: "ff:ff:ff:ff:ff:ff",
  min_mtu: 68,
  max_mtu: 65535,
  linkinfo: { info_kind: "veth" },
  num_tx_queues: 2,
  num_rx_queues: 2,
  gso_max_size: 65536,
  gso_max_segs: 65535,
  tso_max_size: 524280,
  tso_max_segs: 65535,
  gro_max_size: 65536,
};
const virtio: Json = {
  ...Object.fromEntries(
    Object.entries(veth).filter(
      ([k]) => !["link", "link_index", "link_netnsid", "linkinfo"].includes(k),
    ),
  ),
  ifindex: 2,
  qdisc: "fq_codel",
  max_mtu: 65521,
  num_tx_queues: 1,
  num_rx_queues: 1,
  tso_max_size: 65536,
  parentbus: "virtio",
  parentdev: "virtio0",
};

const addr = (a: Json) => ({
  ...veth,
  addr_info: [
    {
      family: "inet6",
      prefixlen: 64,
      scope: "global",
      valid_life_time: 4294967295,
      preferred_life_time: 4294967295,
      ...a,
    },
  ],
});
const rt = (r: Json): Json => ({
  family: "inet",
  type: "unicast",
  dst: "10.8.0.0/16",
  gateway: "10.9.0.2",
  dev: "eth0",
  table: "main",
  protocol: "boot",
  scope: "global",
  flags: [],
  ...r,
});

const noarp: Json = { ...veth, flags: ["BROADCAST", "MULTICAST", "NOARP", "UP", "LOWER_UP"] };
const noarpEntry = (dst: string, lladdr: string): Json => ({
  family: "inet6",
  dst,
  dev: "eth0",
  lladdr,
  state: ["NOARP"],
});

export interface Case {
  pod: Partial<CompleteRead>;
  guest: Partial<CompleteRead>;
  /** The guest with a neighbouring difference the entry does not cover. */
  near: Partial<CompleteRead>;
}

export const CASES: Record<keyof typeof MIRROR_DIFFERENCES, Case> = {
  linkIndex: {
    pod: { links: [veth] },
    guest: { links: [{ ...veth, ifindex: 9, link: "p0", link_index: 4, link_netnsid: 1 }] },
    near: { links: [{ ...veth, ifindex: 9, mtu: 1400 }] },
  },
  linkDevice: {
    pod: { links: [veth] },
    guest: { links: [{ ...virtio, qdisc: "noqueue" }] },
    near: { links: [{ ...virtio, qdisc: "noqueue", txqlen: 500 }] },
  },
  linkQdisc: {
    pod: { links: [veth] },
    guest: { links: [{ ...veth, qdisc: "fq_codel" }] },
    near: { links: [{ ...veth, qdisc: "fq_codel", group: "10" }] },
  },
  linkCarrier: {
    pod: { links: [veth] },
    guest: {
      links: [
        {
          ...veth,
          operstate: "LOWERLAYERDOWN",
          flags: ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"],
        },
      ],
    },
    near: { links: [{ ...veth, operstate: "DOWN", flags: ["BROADCAST", "MULTICAST"] }] },
  },
  addressLifetimes: {
    pod: {
      addresses: [addr({ local: "fd00::1", valid_life_time: 3600, preferred_life_time: 1800 })],
    },
    guest: {
      addresses: [addr({ local: "fd00::1", valid_life_time: 3598, preferred_life_time: 1798 })],
    },
    near: {
      addresses: [addr({ local: "fd00::1", valid_life_time: 3598, preferred_life_time: 0 })],
    },
  },
  addressTentative: {
    pod: { addresses: [addr({ local: "fd00::1" })] },
    guest: { addresses: [addr({ local: "fd00::1", tentative: true })] },
    near: { addresses: [addr({ local: "fd00::1", dadfailed: true, tentative: true })] },
  },
  addressGuestNodad: {
    pod: { addresses: [addr({ local: "fd00::1" })] },
    guest: { addresses: [addr({ local: "fd00::1", nodad: true })] },
    near: { addresses: [addr({ local: "fd00::1", nodad: true, noprefixroute: true })] },
  },
  addressKernelLinkLocal: {
    pod: { addresses: [addr({ local: "fe80::1:2ff:fe03:405", scope: "link" })] },
    guest: { addresses: [addr({ local: "fe80::ff:fe00:1", scope: "link" })] },
    // A link-local a pod adds itself (no ff:fe) is compared.
    near: {
      addresses: [
        addr({ local: "fe80::ff:fe00:1", scope: "link" }),
        addr({ local: "fe80::1", scope: "link" }),
      ],
    },
  },
  routeKernelLinkLocal: {
    pod: {
      routes: [
        rt({
          family: "inet6",
          type: "local",
          dst: "fe80::1:2ff:fe03:405",
          table: "local",
          protocol: "kernel",
          gateway: undefined,
        }),
      ],
    },
    guest: { routes: [] },
    near: {
      routes: [
        rt({
          family: "inet6",
          type: "local",
          dst: "fe80::1",
          table: "local",
          protocol: "kernel",
          gateway: undefined,
        }),
      ],
    },
  },
  routeExpires: {
    pod: { routes: [rt({ family: "inet6", dst: "fd00::/64", expires: 300 })] },
    guest: { routes: [rt({ family: "inet6", dst: "fd00::/64", expires: 290 })] },
    near: { routes: [rt({ family: "inet6", dst: "fd00::/64" })] },
  },
  routeCarrierOnly: {
    pod: { links: [{ ...veth, flags: ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"] }] },
    guest: {
      links: [virtio],
      routes: [
        rt({ family: "inet6", type: "multicast", dst: "ff00::/8", gateway: undefined }),
        rt({ family: "inet6", type: "local", dst: "fd00::1", gateway: undefined }),
      ].map((r) => ({ ...r, table: "local", protocol: "kernel", metric: 256 })),
    },
    // Without carrier on the guest's side too, the same route is compared.
    near: {
      links: [{ ...virtio, flags: ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"] }],
      routes: [
        {
          ...rt({ family: "inet6", type: "multicast", dst: "ff00::/8", gateway: undefined }),
          table: "local",
          protocol: "kernel",
        },
      ],
    },
  },
  routeCarrier: {
    pod: {
      routes: [
        rt({
          nexthops: [{ gateway: "10.9.0.2", dev: "eth0", weight: 1, flags: [] }],
          gateway: undefined,
          dev: undefined,
        }),
      ],
    },
    guest: {
      routes: [
        rt({
          nexthops: [{ gateway: "10.9.0.2", dev: "eth0", weight: 1, flags: ["linkdown", "dead"] }],
          gateway: undefined,
          dev: undefined,
        }),
      ],
    },
    near: {
      routes: [
        rt({
          nexthops: [{ gateway: "10.9.0.2", dev: "eth0", weight: 1, flags: ["onlink"] }],
          gateway: undefined,
          dev: undefined,
        }),
      ],
    },
  },
  neighbourLearned: {
    pod: {
      neighbours: [
        {
          family: "inet",
          dst: "10.9.0.2",
          dev: "eth0",
          lladdr: "02:00:00:00:00:09",
          state: ["REACHABLE"],
        },
      ],
    },
    guest: {
      neighbours: [
        {
          family: "inet",
          dst: "10.9.0.3",
          dev: "eth0",
          lladdr: "02:00:00:00:00:0a",
          state: ["STALE"],
        },
      ],
    },
    near: {
      neighbours: [
        {
          family: "inet",
          dst: "10.9.0.3",
          dev: "eth0",
          lladdr: "02:00:00:00:00:0a",
          state: ["PERMANENT"],
        },
      ],
    },
  },
  neighbourKernelMulticast: {
    pod: {
      neighbours: [
        {
          family: "inet6",
          dst: "ff02::2",
          dev: "eth0",
          lladdr: "33:33:00:00:00:02",
          state: ["NOARP"],
        },
      ],
    },
    guest: { neighbours: [] },
    near: {
      neighbours: [
        {
          family: "inet6",
          dst: "fd00::9",
          dev: "eth0",
          lladdr: "02:00:00:00:00:09",
          state: ["NOARP"],
        },
      ],
    },
  },
  neighbourNoarpLink: {
    pod: {
      links: [noarp],
      neighbours: [noarpEntry("fe80::fc57:69ff:fe1a:e86f", String(noarp.address))],
    },
    guest: {
      links: [noarp],
      neighbours: [noarpEntry("fe80::a0f4:dff:fecf:8f45", String(noarp.address))],
    },
    // The same entry holding another MAC is configuration: compared.
    near: {
      links: [noarp],
      neighbours: [noarpEntry("fe80::a0f4:dff:fecf:8f45", "02:00:00:00:00:09")],
    },
  },
  sysctlOwnDefault: {
    pod: {
      fresh: new Map([["ipv4/tcp_rmem", "4096 131072 6291456"]]),
      sysctls: new Map([["ipv4/tcp_rmem", "4096 131072 6291456"]]),
    },
    guest: {
      fresh: new Map([["ipv4/tcp_rmem", "4096 65536 1048576"]]),
      sysctls: new Map([["ipv4/tcp_rmem", "4096 65536 1048576"]]),
    },
    near: {
      fresh: new Map([["ipv4/tcp_rmem", "4096 65536 1048576"]]),
      sysctls: new Map([["ipv4/tcp_rmem", "4096 65536 2097152"]]),
    },
  },
  sysctlGlobal: {
    pod: {
      fresh: new Map([["core/somaxconn", "4096"]]),
      sysctls: new Map([["core/somaxconn", "4096"]]),
    },
    guest: {
      fresh: new Map([["core/somaxconn", "4096"]]),
      sysctls: new Map([
        ["core/somaxconn", "4096"],
        ["core/bpf_jit_enable", "1"],
        ["ipv4/route/gc_timeout", "300"],
      ]),
    },
    near: {
      fresh: new Map([["core/somaxconn", "4096"]]),
      sysctls: new Map([
        ["core/somaxconn", "8192"],
        ["core/bpf_jit_enable", "1"],
      ]),
    },
  },
  sysctlReport: {
    pod: {
      fresh: new Map([["ipv4/tcp_ehash_entries", "-262144"]]),
      sysctls: new Map([["ipv4/tcp_ehash_entries", "-262144"]]),
    },
    guest: {
      fresh: new Map([["ipv4/tcp_ehash_entries", "-4096"]]),
      sysctls: new Map([["ipv4/tcp_ehash_entries", "4096"]]),
    },
    near: {
      fresh: new Map([
        ["ipv4/tcp_ehash_entries", "-4096"],
        ["ipv4/tcp_child_ehash_entries", "0"],
      ]),
      sysctls: new Map([
        ["ipv4/tcp_ehash_entries", "4096"],
        ["ipv4/tcp_child_ehash_entries", "1024"],
      ]),
    },
  },
  sysctlOneKernel: {
    pod: {
      fresh: new Map([["netfilter/nf_conntrack_max", "262144"]]),
      sysctls: new Map([["netfilter/nf_conntrack_max", "262144"]]),
    },
    guest: {},
    near: {
      fresh: new Map([["ipv4/tcp_new_knob", "1"]]),
      sysctls: new Map([["ipv4/tcp_new_knob", "2"]]),
    },
  },
  lookupCache: { pod: {}, guest: {}, near: {} },
  lookupSourceOtherLink: { pod: {}, guest: {}, near: {} },
  lookupSourceMultipathHop: { pod: {}, guest: {}, near: {} },
  lookupKernelLinkLocalSource: { pod: {}, guest: {}, near: {} },
};
