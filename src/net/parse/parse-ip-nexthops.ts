/**
 * Nexthop objects from `ip -d -j nexthop show` into the model. A single
 * nexthop without a gateway (a link alone, a blackhole) shows no family:
 * `ip -6 -j nexthop show` lists the IPv6 ones, whose ids the caller passes.
 * Unknown or malformed entries are skipped, never thrown on.
 */
import { parseIp } from "../model/address";
import type { Nexthop } from "../model/model";
import { readAttrs } from "../vocabulary/attrs";
import { NEXTHOP_ATTRS } from "../vocabulary/nexthop-attrs";
import { NEXTHOP_DEFAULT_PROTOCOL } from "../vocabulary/routes";
import { asArray, type Json, str } from "./json-fields";

/** The ids of a nexthop listing (`ip -6 -j nexthop show`: the IPv6 ones). */
export function nexthopIds(doc: unknown): Set<number> {
  const ids = new Set<number>();
  for (const n of asArray(doc)) if (typeof n.id === "number") ids.add(n.id);
  return ids;
}

function groupOf(v: unknown): Nexthop["group"] {
  if (!Array.isArray(v)) return undefined;
  const out: { id: number; weight: number }[] = [];
  for (const m of asArray(v)) {
    if (typeof m.id !== "number") continue;
    out.push({ id: m.id, weight: typeof m.weight === "number" ? m.weight : 1 });
  }
  return out;
}

/**
 * Without `ipv6Ids` the family of a single nexthop without a gateway comes
 * from its scope (the kernel gives an IPv4 one through a link scope host,
 * an IPv6 one scope link: nh_create_ipv4/ipv6); a blackhole is then IPv4.
 */
export function parseNexthops(doc: unknown, ipv6Ids?: ReadonlySet<number>): Nexthop[] {
  const out: Nexthop[] = [];
  for (const n of asArray(doc)) {
    if (typeof n.id !== "number") continue;
    const group = groupOf(n.group);
    const gw = str(n.gateway);
    const parsed = gw === undefined ? undefined : parseIp(gw);
    if (typeof parsed === "string") continue;
    const flags = Array.isArray(n.flags) ? n.flags : [];
    const nh: Nexthop = {
      id: n.id,
      family: group ? 0 : (parsed?.family ?? familyWithout(n, ipv6Ids)),
      ...(parsed ? { gateway: parsed.text } : {}),
      dev: str(n.dev) ?? "",
      onlink: flags.includes("onlink"),
      blackhole: "blackhole" in n,
      ...(group ? { group } : {}),
      protocol: n.protocol === undefined ? NEXTHOP_DEFAULT_PROTOCOL : String(n.protocol),
    };
    const attrs = readAttrs(NEXTHOP_ATTRS, n);
    if (attrs.length) nh.attrs = attrs;
    out.push(nh);
  }
  return out;
}

function familyWithout(n: Json, ipv6Ids: ReadonlySet<number> | undefined): 4 | 6 {
  if (ipv6Ids) return ipv6Ids.has(n.id as number) ? 6 : 4;
  return n.blackhole === undefined && n.scope === "link" ? 6 : 4;
}
