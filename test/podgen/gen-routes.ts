/**
 * Routes: several tables, every route type, every
 * nexthop form (gateway, device, onlink, multipath, IPv4 via inet6, nhid),
 * the metrics `ip route` knows, and `ip route append` duplicates. A route
 * key (family, table, dst, from, tos, metric) is used once, except by the
 * appends, which mean to repeat it.
 */

import { genMetrics } from "./gen-route-metrics";
import { type GenState, type NicState, onlinkGateway } from "./gen-state";

type Family = 4 | 6;
const TABLES = [
  ["main", 5],
  ["100", 2],
  ["200", 2],
  ["1000000", 1],
  ["default", 1],
] as const;

export function genRoutes(g: GenState): void {
  const { rng } = g;
  const families: Family[] = g.withFamily(6).length ? [4, 4, 4, 6, 6] : [4];
  if (!g.withFamily(4).length) return;
  for (let i = rng.int(4, 14); i > 0; i--) genRoute(g, rng.pick(families));
  // Routes that use the nexthop objects (the generator made none without them).
  for (const h of g.nexthops)
    if (rng.chance(0.6)) genRoute(g, h.family === 6 && rng.chance(0.7) ? 6 : 4, h.id);
}

/** The route's type: unicast over a nexthop object, else mostly unicast, any other now and then. */
function routeType(rng: GenState["rng"], family: Family, nhid?: number) {
  return nhid
    ? "unicast"
    : rng.weighted([
        ["unicast", 16],
        ["blackhole", 1],
        ["unreachable", 1],
        ["prohibit", 1],
        ["throw", 1],
        ["local", 1],
        ["anycast", 1],
        ["multicast", 1],
        ...(family === 4
          ? ([
              ["broadcast", 1],
              ["nat", 0.4],
            ] as const)
          : []),
      ] as const);
}

function genRoute(g: GenState, family: Family, nhid?: number): void {
  const { rng } = g;
  const nics = g.withFamily(family);
  if (nics.length === 0) return;
  const fam = family === 6 ? ["-6"] : [];
  const table = rng.weighted(TABLES);
  const type = routeType(rng, family, nhid);
  const dst = pickDst(g, family, type);
  const tags = [`route type ${type}`, ...(table === "main" ? [] : [`route table ${table}`])];
  const opts: string[] = [];
  let tos = "";
  let from = "";
  let metric = family === 6 ? 1024 : 0;
  if (family === 4 && rng.chance(0.12)) {
    tos = rng.pick(["0x04", "0x08", "0x10", "0x18", "0x20", "0xb8"]);
    tags.push("route tos");
    opts.push("tos", tos);
  }
  // The kernel refuses source-specific routes over nexthop objects.
  if (family === 6 && !nhid && rng.chance(0.1)) {
    from = rng.chance(0.6) ? `${rng.pick(rng.pick(nics).v6prefixes)}::/64` : `${g.v6base}::/48`;
    tags.push("route from");
    opts.push("from", from);
  }
  if (rng.chance(family === 6 ? 0.35 : 0.25)) {
    metric = rng.int(1, family === 6 ? 2000 : 500);
    tags.push("route metric");
    opts.push("metric", String(metric));
  }
  const key = [family, table, dst, from, tos, metric].join("|");
  if (g.routeKeys.has(key)) return;
  g.routeKeys.add(key);
  const hop = nhid
    ? { args: ["nhid", String(nhid)], tags: ["route nhid"], nic: undefined }
    : nextHop(g, family, type, nics);
  if (!hop) return;
  tags.push(...hop.tags);
  if (rng.chance(0.3)) {
    tags.push("route protocol");
    opts.push("proto", rng.pick(["static", "boot", "dhcp", "99", "200", "ra"]));
  }
  if (type === "unicast") {
    const src = hop.nic && rng.chance(0.15) ? rng.pick([...g.locals(family), ""]) : "";
    if (src) {
      tags.push("route src");
      opts.push("src", src);
    }
    if (family === 6 && rng.chance(0.08)) {
      tags.push("route expires");
      opts.push("expires", String(rng.int(600, 86400)));
    }
    if (rng.chance(0.35)) genMetrics(rng, family, tags, opts);
  }
  if (family === 6 && rng.chance(0.12)) {
    tags.push("route pref");
    opts.push("pref", rng.pick(["low", "medium", "high"]));
  }
  // A multipath route's realm would have to be given per hop (the kernel refuses a mismatch).
  if (family === 4 && hop.args[0] !== "nexthop" && rng.chance(0.08)) {
    tags.push("route realm");
    opts.push("realm", String(rng.int(1, 255)));
  }
  const typeWord = type === "unicast" && rng.chance(0.7) ? [] : [type];
  // ip route takes multipath hops last ("nexthop" ... to the end of the line).
  const multi = hop.args[0] === "nexthop";
  const before = multi ? [] : hop.args;
  const after = multi ? hop.args : [];
  g.ip(
    tags,
    ...fam,
    "route",
    "add",
    ...typeWord,
    dst,
    ...before,
    "table",
    table,
    ...opts,
    ...after,
  );
  // ip route append: the same key again with another gateway (IPv6 merges it into multipath).
  if (type === "unicast" && hop.nic && hop.args[0] === "via" && rng.chance(0.15)) {
    const gws = (family === 4 ? hop.nic.gw4 : hop.nic.gw6).filter((x) => x !== hop.args[1]);
    if (gws.length) {
      const keep = [
        ...(tos ? ["tos", tos] : []),
        ...(from ? ["from", from] : []),
        ...(opts.includes("metric") ? ["metric", String(metric)] : []),
      ];
      g.ip(
        ["route append"],
        ...fam,
        "route",
        "append",
        dst,
        "via",
        rng.pick(gws),
        "dev",
        hop.nic.name,
        "table",
        table,
        ...keep,
      );
    }
  }
}

interface Hop {
  args: string[];
  tags: string[];
  nic: NicState | undefined;
}

function nextHop(g: GenState, family: Family, type: string, nics: NicState[]): Hop | undefined {
  const { rng } = g;
  const nic = rng.pick(nics);
  if (["blackhole", "unreachable", "prohibit", "throw"].includes(type))
    return { args: [], tags: [], nic: undefined };
  if (type === "nat") return { args: ["via", onlinkGateway(nic, 4)], tags: [], nic: undefined };
  if (type !== "unicast") return { args: ["dev", nic.name], tags: [], nic: undefined };
  const gws = family === 4 ? nic.gw4 : nic.gw6;
  const v6nics = g.withFamily(6).filter((n) => n.gw6.length);
  const form = rng.weighted([
    ["via", gws.length ? 6 : 0],
    ["dev", 2],
    ["onlink", 1],
    ["multipath", 1.5],
    ["inet6", family === 4 && v6nics.length ? 0.8 : 0],
  ] as const);
  if (form === "via")
    return { args: ["via", rng.pick(gws), "dev", nic.name], tags: ["route gateway"], nic };
  if (form === "onlink") {
    return {
      args: ["via", onlinkGateway(nic, family), "dev", nic.name, "onlink"],
      tags: ["route onlink"],
      nic,
    };
  }
  if (form === "inet6") {
    const n6 = rng.pick(v6nics);
    return {
      args: ["via", "inet6", rng.pick(n6.gw6), "dev", n6.name],
      tags: ["route via inet6"],
      nic: undefined,
    };
  }
  if (form === "multipath") return multipath(g, family, nics);
  const scope = rng.weighted([
    ["", 4],
    ["link", 4],
    ["host", family === 4 ? 1 : 0],
  ] as const);
  return {
    args: ["dev", nic.name, ...(scope ? ["scope", scope] : [])],
    tags: scope ? ["route scope"] : [],
    nic,
  };
}

function multipath(g: GenState, family: Family, nics: NicState[]): Hop {
  const { rng } = g;
  const args: string[] = [];
  const seen = new Set<string>();
  const tags = ["route multipath"];
  for (let k = rng.int(2, 3); k > 0; k--) {
    const n = rng.pick(nics);
    const gws = family === 4 ? n.gw4 : n.gw6;
    const onlink = gws.length === 0 || rng.chance(0.2);
    const gw = onlink ? onlinkGateway(n, family, rng.int(1, 9)) : rng.pick(gws);
    if (seen.has(`${gw}%${n.name}`)) continue;
    seen.add(`${gw}%${n.name}`);
    args.push("nexthop", "via", gw, "dev", n.name, "weight", String(rng.int(1, 10)));
    if (onlink) {
      args.push("onlink");
      if (!tags.includes("route onlink")) tags.push("route onlink");
    }
  }
  return { args, tags, nic: undefined };
}

function pickDst(g: GenState, family: Family, type: string): string {
  const { rng } = g;
  const h = () => rng.int(0, 0xffff).toString(16);
  if (family === 4) {
    if (type === "multicast")
      return rng.pick([
        `224.${rng.int(1, 200)}.0.0/16`,
        `239.${rng.int(1, 255)}.${rng.int(0, 255)}.0/24`,
      ]);
    if (type === "broadcast") return `198.51.100.${rng.int(1, 254)}`;
    return rng.weighted([
      ["default", 2],
      [`10.${rng.int(0, 99)}.0.0/16`, 3],
      [`172.${rng.int(16, 31)}.${rng.int(0, 255)}.0/24`, 2],
      [`192.168.${rng.int(0, 255)}.0/24`, 2],
      [rng.pick(["100.64.0.0/12", "100.64.0.0/10", `100.${rng.int(64, 127)}.0.0/16`]), 1],
      [`198.18.${rng.int(0, 255)}.${rng.int(1, 254)}/32`, 1],
      [`203.0.113.${rng.int(1, 254)}`, 1],
    ] as const);
  }
  if (type === "multicast") return `ff3e:0:${h()}::/48`;
  return rng.weighted([
    ["default", 2],
    [`fd${rng.int(0, 255).toString(16).padStart(2, "0")}:${h()}::/48`, 3],
    [`2001:db8:${h()}::/48`, 2],
    [`${g.v6base}:ff${rng.int(0, 255).toString(16).padStart(2, "0")}::/64`, 1],
    [`2001:db8::${h()}/128`, 1],
  ] as const);
}
