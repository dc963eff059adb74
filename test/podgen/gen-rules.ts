/**
 * Policy rules of both families (every selector and action `ip rule` has,
 * iif/oif naming a device that does not exist) and neighbours (permanent,
 * router, proxy, extern_learn).
 */
import { type GenState, macFrom, v4addr } from "./gen-state";

const TABLES = ["main", "100", "200", "1000000", "default"];
const ABSENT = ["ghost0", "nosuch.1"];

export function genRules(g: GenState): void {
  const { rng } = g;
  for (const family of [4, 6] as const) {
    const count = rng.weighted([
      [0, 2],
      [1, 2],
      [2, 2],
      [3, 2],
      [5, 1],
    ] as const);
    const prefs = Array.from({ length: count }, () => g.rulePref()).sort((a, b) => a - b);
    prefs.forEach((pref, i) => {
      genRule(g, family, pref, prefs.slice(i + 1));
    });
  }
}

function genRule(g: GenState, family: 4 | 6, pref: number, later: number[]): void {
  const { rng } = g;
  const tags = ["rule", ...(family === 6 ? ["rule inet6"] : [])];
  const args: string[] = [...(family === 6 ? ["-6"] : []), "rule", "add"];
  // Without pref the kernel picks one just below the first rule's, so a goto could point back.
  const withPref = rng.chance(0.9);
  if (withPref) args.push("pref", String(pref));
  else tags.push("rule without pref");
  const sel = (tag: string, ...words: string[]) => {
    tags.push(`rule ${tag}`);
    args.push(...words);
  };
  if (rng.chance(0.06)) {
    sel("l3mdev", "l3mdev");
    g.ip(tags, ...args);
    return;
  }
  if (rng.chance(0.08)) sel("not", "not");
  if (rng.chance(0.45)) sel("from", "from", prefix(g, family));
  if (rng.chance(0.25)) sel("to", "to", prefix(g, family));
  if (rng.chance(0.15)) {
    const m = `0x${rng.int(1, 255).toString(16)}`;
    sel("fwmark", "fwmark", rng.chance(0.5) ? m : `${m}/0xff`);
  }
  if (rng.chance(0.12)) {
    const proto = rng.pick(["tcp", "udp", family === 4 ? "icmp" : "ipv6-icmp"]);
    sel("ipproto", "ipproto", proto);
    if (proto !== "icmp" && proto !== "ipv6-icmp") {
      if (rng.chance(0.6)) sel("dport", "dport", portSpec(g));
      if (rng.chance(0.4)) sel("sport", "sport", portSpec(g));
    }
  } else if (rng.chance(0.06)) sel("dport", "dport", portSpec(g));
  if (rng.chance(0.1)) {
    const lo = rng.int(0, 5000);
    sel("uidrange", "uidrange", `${lo}-${lo + rng.int(0, 2000)}`);
  }
  if (rng.chance(0.1))
    sel(
      rng.chance(0.5) ? "tos" : "dsfield",
      rng.chance(0.5) ? "tos" : "dsfield",
      rng.pick(["0x04", "0x08", "0x10", "0x18"]),
    );
  if (rng.chance(0.12)) {
    const absent = rng.chance(0.5);
    const dir = rng.pick(["iif", "oif"]);
    const dev = absent ? rng.pick(ABSENT) : rng.pick([...g.nics.map((n) => n.name), "lo"]);
    sel(absent ? `${dir} absent device` : dir, dir, dev);
  }
  if (rng.chance(0.08)) sel("protocol", "protocol", rng.pick(["static", "boot", "99"]));
  if (family === 4 && rng.chance(0.06))
    sel(
      "realms",
      "realms",
      rng.chance(0.5) ? String(rng.int(1, 255)) : `${rng.int(1, 255)}/${rng.int(1, 255)}`,
    );
  const action = rng.weighted([
    ["table", 10],
    ["blackhole", 1],
    ["unreachable", 1],
    ["prohibit", 1],
    ["goto", later.length && withPref ? 1 : 0],
    ["nop", 0.5],
  ] as const);
  if (action === "table") {
    args.push("table", rng.pick(TABLES));
    if (rng.chance(0.1))
      sel("suppress_prefixlength", "suppress_prefixlength", String(rng.pick([0, 8, 16, 24])));
    if (rng.chance(0.06))
      sel(
        "suppress_ifgroup",
        "suppress_ifgroup",
        String(g.nics.find((n) => n.group)?.group ?? rng.int(1, 20)),
      );
  } else if (action === "goto") sel("goto", "goto", String(rng.pick(later)));
  else sel(action, action);
  g.ip(tags, ...args);
}

function prefix(g: GenState, family: 4 | 6): string {
  const { rng } = g;
  if (family === 4) {
    const n = rng.pick(g.nics);
    return rng.pick([
      `${v4addr(n, 0)}/${n.v4net.prefix}`,
      `${n.addrs.find((a) => a.family === 4)?.local ?? "10.1.2.3"}/32`,
      `10.${rng.int(0, 99)}.0.0/16`,
      "100.64.0.0/12",
      `192.168.${rng.int(0, 255)}.0/24`,
    ]);
  }
  const n6 = g.nics.filter((n) => n.v6prefixes.length);
  return rng.pick([
    `${g.v6base}::/48`,
    `${g.v6base}:ff00::/56`,
    ...(n6.length ? [`${rng.pick(rng.pick(n6).v6prefixes)}::/64`] : []),
    `2001:db8:${rng.int(0, 0xffff).toString(16)}::/48`,
  ]);
}

function portSpec(g: GenState): string {
  const lo = g.rng.pick([22, 53, 80, 443, 1000, 8080, 30000]);
  return g.rng.chance(0.5) ? String(lo) : `${lo}-${lo + g.rng.int(1, 1000)}`;
}

export function genNeighbours(g: GenState): void {
  const { rng } = g;
  for (const n of g.veths()) {
    const taken = new Set<string>();
    for (let k = rng.weighted([0, 1, 2, 3].map((c) => [c, c === 0 ? 2 : 1] as const)); k > 0; k--) {
      const family = n.ipv6 && n.v6prefixes.length && rng.chance(0.4) ? 6 : 4;
      const ip =
        family === 4
          ? v4addr(n, rng.int(20, 60))
          : `${rng.pick(n.v6prefixes)}::${rng.int(0x100, 0x1ff).toString(16)}`;
      if (taken.has(ip) || n.addrs.some((a) => a.local === ip)) continue;
      taken.add(ip);
      const fam = family === 6 ? ["-6"] : [];
      const kind = rng.weighted([
        ["permanent", 4],
        ["router", 1.5],
        ["proxy", 1.5],
        ["extern_learn", 1],
      ] as const);
      if (kind === "proxy") {
        g.ip(["neighbour proxy"], ...fam, "neigh", "add", "proxy", ip, "dev", n.name);
        continue;
      }
      const base = [...fam, "neigh", "add", ip, "lladdr", macFrom(rng), "dev", n.name];
      if (kind === "extern_learn") g.ip(["neighbour extern_learn"], ...base, "extern_learn");
      else if (kind === "router") g.ip(["neighbour router"], ...base, "nud", "permanent", "router");
      else g.ip(["neighbour permanent"], ...base, "nud", "permanent");
    }
  }
}
