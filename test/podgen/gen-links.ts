/**
 * The pod's NICs, their link attributes and flags, their addresses. A NIC
 * whose MTU drops below 1280, or with disable_ipv6, has no IPv6 (the
 * kernel removes it), so nothing IPv6 is written for it afterwards. The
 * first NIC is a veth that stays up (the pod's uplink); others may be taps
 * with a MAC, bridges without ports (no carrier: IPv4 only, IPv6 then
 * follows carrier), a tun, left down, or given no address.
 */
import { type GenState, macFrom, type NicState, v4addr, v4broadcast } from "./gen-state";

const VETH_NAMES = ["eth0", "eth1", "net1", "vnic.a-b_c", "abcdefghijklmno", "ens4", "pod_n-1"];
const TUN_NAMES = ["tun0", "tun.x"];

/** 1-3 NICs: a veth first, then veths, taps, bridges or one tun. */
export function genNics(g: GenState): void {
  const { rng } = g;
  const count = rng.weighted([
    [1, 4],
    [2, 4],
    [3, 2],
  ] as const);
  const names = rng.shuffle(VETH_NAMES);
  const used = new Set<number>();
  for (let i = 0; i < count; i++) {
    const hasTun = g.nics.some((n) => n.kind === "tun");
    const kind =
      i === 0
        ? "veth"
        : rng.weighted([
            ["veth", 6],
            ["tap", 2],
            ["bridge", 1],
            ["tun", hasTun ? 0 : 2],
          ] as const);
    let a = rng.int(100, 199);
    while (used.has(a)) a = rng.int(100, 199);
    used.add(a);
    const nic: NicState = {
      index: i,
      name: kind === "tun" ? rng.pick(TUN_NAMES) : (names[i] as string),
      kind,
      mtu: 1500,
      // A bridge without ports has no carrier: its IPv6 would follow carrier alone.
      ipv6: kind !== "bridge",
      noarp: false,
      v4net: {
        a,
        b: rng.int(0, 255),
        prefix: rng.weighted([
          [24, 6],
          [16, 1],
          [28, 2],
          [30, 1],
        ] as const),
      },
      addrs: [],
      gw4: [],
      gw6: [],
      v6prefixes: [],
    };
    if (kind !== "tun") nic.mac = macFrom(rng);
    if (i > 0 && kind !== "tun" && rng.chance(0.1)) nic.bare = true;
    g.nics.push(nic);
  }
}

/** Every flag `ip link set` changes on a NIC, each drawn on its own. */
const FLAGS: readonly (readonly [string, string, number])[] = [
  ["promisc", "on", 0.15],
  ["allmulticast", "on", 0.15],
  ["multicast", "off", 0.1],
  ["dynamic", "on", 0.1],
  ["trailers", "off", 0.1],
];

export function genLinkAttributes(g: GenState): void {
  const { rng } = g;
  for (const n of g.nics) {
    const set = (tags: string[], ...args: string[]) => g.ip(tags, "link", "set", n.name, ...args);
    if (rng.chance(0.3)) {
      n.mtu = rng.weighted([
        [1400, 3],
        [1450, 2],
        [9000, 2],
        [1280, 1],
        [1200, 1],
        [1000, 1],
      ] as const);
      if (n.mtu < 1280) n.ipv6 = false;
      set([n.mtu < 1280 ? "link mtu below 1280" : "link mtu"], "mtu", String(n.mtu));
    }
    if (rng.chance(0.2)) set(["link txqlen"], "txqueuelen", String(rng.pick([0, 100, 500, 5000])));
    if (n.kind !== "tun") {
      for (const [flag, value, p] of FLAGS)
        if (rng.chance(p)) set([`link ${flag} ${value}`], flag, value);
      if (rng.chance(0.12)) {
        n.noarp = true;
        set(["link arp off"], "arp", "off");
      }
    }
    if (rng.chance(0.15)) {
      n.group = rng.int(1, 20);
      set(["link group"], "group", String(n.group));
    }
    if (rng.chance(0.15)) set(["link alias"], "alias", rng.pick(["pod uplink", "net-1", "x.y z"]));
    if (n.ipv6 && rng.chance(0.08)) {
      n.ipv6 = false;
      g.sysctl(
        ["link disable_ipv6"],
        `net.ipv6.conf.${n.name.replaceAll(".", "/")}.disable_ipv6`,
        "1",
      );
    }
    if (n.index > 0 && rng.chance(0.1)) {
      n.down = true;
      continue;
    }
    set(["link up"], "up");
  }
}

export function genAddresses(g: GenState): void {
  for (const n of g.nics) {
    if (n.bare) continue;
    genV4(g, n);
    if (n.ipv6) genV6(g, n);
    // A down link's addresses are no source and reach no gateway.
    if (n.down) {
      for (const a of n.addrs) a.usableSrc = false;
      n.gw4 = [];
      n.gw6 = [];
    }
  }
}

function genV4(g: GenState, n: NicState): void {
  const { rng } = g;
  const dev = ["dev", n.name];
  const host = rng.int(2, Math.min(6, 2 ** (32 - n.v4net.prefix) - 3));
  const local = v4addr(n, host);
  if (rng.chance(n.kind === "tun" ? 0.7 : 0.12)) {
    const peer = v4addr(n, 1);
    g.ip(["address peer"], "address", "add", local, "peer", `${peer}/32`, ...dev);
    n.addrs.push({ family: 4, local, usableSrc: true });
    n.gw4.push(peer);
    return;
  }
  const tags = ["address"];
  const opts: string[] = [];
  if (n.v4net.prefix <= 30 && rng.chance(0.25)) {
    tags.push("address broadcast");
    opts.push("broadcast", rng.chance(0.5) ? "+" : v4broadcast(n));
  }
  const noprefix = rng.chance(0.13);
  if (noprefix) {
    tags.push("address noprefixroute");
    opts.push("noprefixroute");
  }
  if (rng.chance(0.12)) {
    tags.push("address metric");
    opts.push("metric", String(rng.int(1, 1000)));
  }
  if (n.name.length <= 13 && rng.chance(0.15)) {
    tags.push("address label");
    opts.push("label", `${n.name}:${rng.int(0, 9)}`);
  }
  // Addresses of one subnet must share a scope: the secondary repeats it.
  const scope = rng.chance(0.08) ? ["scope", rng.pick(["link", "host", "200"])] : [];
  if (scope.length) {
    tags.push("address scope");
    opts.push(...scope);
  }
  if (rng.chance(0.12)) {
    tags.push("address lifetimes");
    opts.push("valid_lft", String(rng.int(3600, 86400)), "preferred_lft", String(rng.int(0, 3600)));
  }
  g.ip(tags, "address", "add", `${local}/${n.v4net.prefix}`, ...opts, ...dev);
  n.addrs.push({ family: 4, local, usableSrc: true });
  if (!noprefix) n.gw4.push(v4addr(n, 1));
  const size = 2 ** (32 - n.v4net.prefix);
  if (size >= 16 && rng.chance(0.3)) {
    const second = v4addr(n, host + rng.int(1, 6));
    g.ip(["address secondary"], "address", "add", `${second}/${n.v4net.prefix}`, ...scope, ...dev);
    n.addrs.push({ family: 4, local: second, usableSrc: true });
  }
}

function genV6(g: GenState, n: NicState): void {
  const { rng } = g;
  const dev = ["dev", n.name];
  const count =
    n.kind === "tun"
      ? rng.int(0, 1)
      : rng.weighted([0, 1, 2, 3].map((c) => [c, c ? 3 : 1] as const));
  for (let k = 0; k < count; k++) {
    const reuse = n.v6prefixes.length > 0 && rng.chance(0.35);
    const prefix = reuse
      ? rng.pick(n.v6prefixes)
      : `${g.v6base}:${(0x100 * (n.index + 1) + k).toString(16)}`;
    if (!reuse) n.v6prefixes.push(prefix);
    const local = `${prefix}::${rng.int(2, 0xfff).toString(16)}`;
    if (n.addrs.some((a) => a.local === local)) continue;
    const tags = ["address inet6"];
    const opts: string[] = [];
    let usable = n.kind === "veth" || n.kind === "tap";
    let onlinkPrefix = true;
    let spec = `${local}/64`;
    if (rng.chance(0.06)) {
      tags.push("address peer");
      const peer = `${prefix}::1`;
      spec = `${local}`;
      opts.push("peer", `${peer}/128`);
      n.gw6.push(peer);
      onlinkPrefix = false;
    } else if (rng.chance(0.12)) {
      tags.push("address noprefixroute");
      opts.push("noprefixroute");
      onlinkPrefix = false;
    }
    if (rng.chance(0.12)) {
      tags.push("address metric");
      opts.push("metric", String(rng.int(1, 2000)));
    }
    if (rng.chance(0.15)) {
      tags.push("address preferred_lft 0");
      opts.push("preferred_lft", "0");
      usable = false;
    } else if (rng.chance(0.1)) {
      tags.push("address lifetimes");
      opts.push("valid_lft", String(rng.int(3600, 86400)), "preferred_lft", "1800");
    }
    if (rng.chance(0.08)) {
      tags.push("address home");
      opts.push("home");
    }
    if (spec.endsWith("/64") && rng.chance(0.08)) {
      tags.push("address mngtmpaddr");
      opts.push("mngtmpaddr");
    }
    if (rng.chance(0.08)) {
      tags.push("address nodad");
      opts.push("nodad");
    }
    g.ip(tags, "-6", "address", "add", spec, ...opts, ...dev);
    n.addrs.push({ family: 6, local, usableSrc: usable });
    if (onlinkPrefix) n.gw6.push(`${prefix}::1`);
  }
  if (n.kind !== "tun" && rng.chance(0.15)) {
    const ll = `fe80::${rng.int(1, 0xff).toString(16)}:${rng.int(1, 0xffff).toString(16)}`;
    g.ip(["address user link-local"], "-6", "address", "add", `${ll}/64`, ...dev);
    n.addrs.push({ family: 6, local: ll, usableSrc: false });
  }
  // A NIC's own fe80::/64 reaches any link-local gateway (a tun has none).
  if (n.kind !== "tun") n.gw6.push(`fe80::${rng.int(1, 9)}`);
}
