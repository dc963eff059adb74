/**
 * Which element of a desired state a plan line writes, so that a line the
 * guest's kernel refuses can be left out of a best-effort Apply by its
 * field (`desired.routes[3]`) instead of failing the whole call. Pure.
 *
 * An element is named only when the line is exactly what the planners
 * render for it: a route's replace or append, a nexthop object's replace,
 * a rule's add, a permanent
 * neighbour's replace, an address's add or replace on its link, a link's
 * MTU. Any other line (a delete of something the guest has, a rename, an
 * up) names no element, and its failure stays the call's failure.
 */
import type { DesiredState } from "../model/full-state";
import { type Link, routeDevs } from "../model/model";
import { parseSysctlKey } from "../sysctl/sysctl-keys";
import { renderPermanentNeighbor } from "./plan-neighbors";
import { renderNexthopReplace, renderRouteReplace } from "./render-batch";
import { IPV6_BATCH, renderRule } from "./rules";

/** Fields of a desired state left out of an attempt. */
export type LeftOutFields = ReadonlySet<string>;

/**
 * `desired` without the elements named in `skip` (a link's `.mtu`: the MTU
 * is left as it is; a whole link: only a tun or tap device, with
 * {@link fieldsThrough} skipped beside it).
 */
export function withoutFields(desired: DesiredState, skip: LeftOutFields): DesiredState {
  if (skip.size === 0) return desired;
  const keep = <T>(list: readonly T[], kind: string) =>
    list.filter((_, i) => !skip.has(`desired.${kind}[${i}]`));
  return {
    links: keep(desired.links, "interfaces").map((l) => {
      const i = desired.links.indexOf(l);
      const f = `desired.interfaces[${i}]`;
      return {
        ...l,
        mtu: skip.has(`${f}.mtu`) ? 0 : l.mtu,
        addresses: l.addresses.filter((_, k) => !skip.has(`${f}.addresses[${k}]`)),
      };
    }),
    routes: keep(desired.routes, "routes"),
    rules: keep(desired.rules, "rules"),
    neighbors: keep(desired.neighbors, "neighbors"),
    sysctls: keep(desired.sysctls, "sysctls"),
    nexthops: keep(desired.nexthops, "nexthops"),
  };
}

/**
 * The fields of what cannot be without the link `name`: routes through it,
 * nexthop objects through it (groups with such a member, routes by any of
 * them), its permanent neighbours and its sysctls. Rules naming it stay:
 * the kernel keeps them, detached.
 */
export function fieldsThrough(desired: DesiredState, name: string): string[] {
  const out: string[] = [];
  const gone = new Set<number>();
  for (const n of desired.nexthops) if (n.dev === name) gone.add(n.id);
  for (const n of desired.nexthops) if (n.group?.some((m) => gone.has(m.id))) gone.add(n.id);
  desired.nexthops.forEach((n, i) => {
    if (gone.has(n.id)) out.push(`desired.nexthops[${i}]`);
  });
  desired.routes.forEach((r, i) => {
    if (routeDevs(r).includes(name) || (r.nhid !== undefined && gone.has(r.nhid)))
      out.push(`desired.routes[${i}]`);
  });
  desired.neighbors.forEach((n, i) => {
    if (n.dev === name) out.push(`desired.neighbors[${i}]`);
  });
  desired.sysctls.forEach((s, i) => {
    const k = parseSysctlKey(s.key);
    if (typeof k !== "string" && k.iface === name) out.push(`desired.sysctls[${i}]`);
  });
  return out;
}

/** The field of the sysctl `key` in `desired`, if it is one. */
export function sysctlField(desired: DesiredState, key: string): string | undefined {
  const i = desired.sysctls.findIndex((s) => s.key === key);
  return i < 0 ? undefined : `desired.sysctls[${i}]`;
}

/**
 * The field of the element of `desired` (original indices; `skip` already
 * left out) that `line` writes, or undefined. `links` are the links as
 * read before the plan, for the names desired links keep.
 */
export function culpritOf(
  line: string,
  desired: DesiredState,
  skip: LeftOutFields,
  links: readonly Link[],
): string | undefined {
  const text = line.startsWith(IPV6_BATCH) ? line.slice(IPV6_BATCH.length) : line;
  const open = (f: string) => !skip.has(f);
  const words = text.split(" ");
  if (words[0] === "route") {
    const i = desired.routes.findIndex(
      (r, n) =>
        open(`desired.routes[${n}]`) &&
        (text === renderRouteReplace(r) || text === renderRouteReplace(r, "append")),
    );
    return i < 0 ? undefined : `desired.routes[${i}]`;
  }
  if (words[0] === "nexthop") {
    const i = desired.nexthops.findIndex(
      (n, k) => open(`desired.nexthops[${k}]`) && text === renderNexthopReplace(n),
    );
    return i < 0 ? undefined : `desired.nexthops[${i}]`;
  }
  if (words[0] === "rule") {
    const i = desired.rules.findIndex((r, n) => {
      if (!open(`desired.rules[${n}]`)) return false;
      const add = renderRule("add", r);
      return text === (add.startsWith(IPV6_BATCH) ? add.slice(IPV6_BATCH.length) : add);
    });
    return i < 0 ? undefined : `desired.rules[${i}]`;
  }
  if (words[0] === "neigh") {
    const i = desired.neighbors.findIndex(
      (n, k) => open(`desired.neighbors[${k}]`) && text === renderPermanentNeighbor(n),
    );
    return i < 0 ? undefined : `desired.neighbors[${i}]`;
  }
  return linkCulprit(words, desired, skip, links);
}

/** `addr add|replace CIDR dev NAME ...` and `link set dev NAME mtu N`, on a desired link's final name. */
function linkCulprit(
  words: readonly string[],
  desired: DesiredState,
  skip: LeftOutFields,
  links: readonly Link[],
): string | undefined {
  const finalName = (mac: string, name: string) =>
    name !== "" ? name : links.find((l) => l.mac === mac)?.name;
  if (words[0] === "tuntap" && words[1] === "add" && words[2] === "dev") {
    const i = desired.links.findIndex(
      (l, n) =>
        l.tuntap !== undefined && l.name === words[3] && !skip.has(`desired.interfaces[${n}]`),
    );
    return i < 0 ? undefined : `desired.interfaces[${i}]`;
  }
  const isAddr = words[0] === "addr" && (words[1] === "add" || words[1] === "replace");
  const isMtu = words[0] === "link" && words[1] === "set" && words[4] === "mtu";
  if (!isAddr && !isMtu) return undefined;
  const dev = isAddr ? words[4] : words[3];
  if ((isAddr && words[3] !== "dev") || (isMtu && words[2] !== "dev")) return undefined;
  for (const [i, l] of desired.links.entries()) {
    if (finalName(l.mac, l.name) !== dev) continue;
    const f = `desired.interfaces[${i}]`;
    if (isMtu) return skip.has(`${f}.mtu`) || l.mtu === 0 ? undefined : `${f}.mtu`;
    const k = l.addresses.findIndex(
      (a, n) => !skip.has(`${f}.addresses[${n}]`) && `${a.address}/${a.prefix}` === words[2],
    );
    return k < 0 ? undefined : `${f}.addresses[${k}]`;
  }
  return undefined;
}
