/**
 * The link part of an Apply: planLink for every desired link in turn, each
 * against the names the earlier lines leave, and a prediction of what the
 * kernel does to routes as a side effect, so that routes can be planned in
 * the same batch. Pure.
 *
 * Kernel facts the prediction rests on (Linux 6.x, checked in a netns):
 * - a link taken down (every rename does) loses every route through it, in
 *   every table and both families, and its IPv6 global addresses; when it
 *   comes up the kernel makes the prefix routes of its addresses again
 *   (IPv4 subnet routes, fe80::/64), even ones deleted before;
 * - a link whose MTU falls below 1280 loses IPv6 at once: every IPv6
 *   route through it (every table), its IPv6 addresses and neighbours;
 * - an address added to an up link brings its prefix route; one removed
 *   takes its prefix route with it.
 * The service reads the state back after the batch and corrects anything
 * this model did not foresee, so a gap here costs a second batch, not a
 * wrong result.
 */
import { networkText, parseIp } from "../model/address";
import type { DesiredLink } from "../model/full-state";
import { type Address, IPV6_MIN_MTU, type Link, type Route } from "../model/model";
import type { Attr } from "../vocabulary/attrs";
import { TABLE_MAIN } from "../vocabulary/routes";
import { impliedKernelRoutes } from "./kernel-routes";
import { planLink } from "./plan-link";
import { findTuntap } from "./plan-tuntap";

export interface LinkPhase {
  lines: string[];
  /** The links as they will be after the lines (names, MTU, flags, addresses). */
  predicted: Link[];
  /** Final name -> current name, for every link whose name changes. */
  formerName: Map<string, string>;
  /** Current names of the links the lines take down. */
  downed: Set<string>;
  /** Current names of the links left with an MTU below 1280 (no IPv6 at all). */
  ipv6Off: Set<string>;
  /** Names of the tun and tap devices the lines make (plan-tuntap.ts). */
  created: string[];
  /** Desired tun and tap devices whose name the guest holds otherwise: by name, why. */
  conflicts: { name: string; why: string }[];
}

function withFlag(flags: readonly string[], flag: string, on: boolean): string[] {
  const rest = flags.filter((f) => f !== flag);
  return on ? [...rest, flag] : rest;
}

export function planLinkPhase(
  current: readonly Link[],
  desired: readonly DesiredLink[],
): LinkPhase {
  let links = current.map((l) => ({ ...l }));
  const lines: string[] = [];
  const downed = new Set<string>();
  const ipv6Off = new Set<string>();
  const originalName = new Map(current.map((l) => [l.index, l.name]));
  const created: string[] = [];
  const conflicts: { name: string; why: string }[] = [];
  // NICs first: tun and tap devices are found by the names NICs leave.
  const order = [...desired.entries()].sort(
    ([, a], [, b]) => Number(!!a.tuntap) - Number(!!b.tuntap),
  );
  for (const [i, want] of order) {
    let link: Link | undefined;
    if (want.tuntap) {
      const found = findTuntap(links, { ...want, tuntap: want.tuntap }, i);
      if ("conflict" in found) {
        conflicts.push({ name: want.name, why: found.conflict });
        continue;
      }
      link = found.link;
      lines.push(...found.lines);
      if (found.created) {
        created.push(want.name);
        links.push(link);
        originalName.set(link.index, link.name);
      }
    } else link = links.find((l) => l.mac === want.mac);
    if (!link) continue;
    const target = { ...want, exactAddresses: false, exactAttrs: true };
    lines.push(...planLink(links, link, target));
    const newName = want.name === "" ? link.name : want.name;
    const wasUp = link.flags.includes("UP");
    if (newName !== link.name) {
      downed.add(originalName.get(link.index) as string);
      const holder = links.find((l) => l.name === newName && l.index !== link.index);
      if (holder) {
        if (holder.flags.includes("UP")) downed.add(originalName.get(holder.index) as string);
        links = links.map((l) => (l.index === holder.index ? { ...l, name: link.name } : l));
      }
    } else if (wasUp && !want.up) {
      downed.add(originalName.get(link.index) as string);
    }
    // A link to be down keeps no address it was not asked for (plan-link.ts).
    const kept: Address[] = want.up ? link.addresses.filter((a) => a.scope !== "global") : [];
    const wanted = new Set(want.addresses.map((a) => `${a.address}/${a.prefix}`));
    let addresses: Address[] = withSecondaries(link.addresses, [
      ...kept.filter((a) => !wanted.has(`${a.address}/${a.prefix}`)),
      ...want.addresses.map((a) => ({
        ...a,
        scope: a.scope ?? (a.address.toLowerCase().startsWith("fe80:") ? "link" : "global"),
      })),
    ]);
    if ((want.mtu || link.mtu) < IPV6_MIN_MTU) {
      ipv6Off.add(originalName.get(link.index) as string);
      addresses = addresses.filter((a) => a.family !== 6);
    }
    let flags = withFlag(link.flags, "UP", want.up);
    flags = withFlag(flags, "NOARP", want.noarp);
    const attrs = mergeAttrs(link.attrs, want.attrs);
    links = links.map((l) =>
      l.index === link.index
        ? {
            ...l,
            name: newName,
            mtu: want.mtu || l.mtu,
            flags,
            addresses,
            ...(attrs ? { attrs } : {}),
          }
        : l,
    );
  }
  const formerName = new Map<string, string>();
  for (const l of links) {
    const was = originalName.get(l.index) as string;
    if (was !== l.name) formerName.set(l.name, was);
  }
  return { lines, predicted: links, formerName, downed, ipv6Off, created, conflicts };
}

/**
 * The addresses with the kernel's `secondary` flag: as read for one the
 * link has; for a new IPv4 one, whether an earlier primary has its prefix
 * length and subnet (the kernel's rule: a secondary has no prefix route of
 * its own, even when that primary has noprefixroute).
 */
function withSecondaries(had: readonly Address[], list: readonly Address[]): Address[] {
  const cidr = (a: Address) => `${a.address}/${a.prefix}`;
  const read = new Map(had.map((a) => [cidr(a), a.secondary === true]));
  const primaries = new Set<string>();
  return list.map((a) => {
    if (a.family !== 4) return a;
    const net = `${subnet(a.address, a.prefix)}/${a.prefix}`;
    const secondary = read.get(cidr(a)) ?? primaries.has(net);
    if (!secondary) primaries.add(net);
    const { secondary: _, ...rest } = a;
    return secondary ? { ...rest, secondary: true } : rest;
  });
}

function subnet(address: string, prefix: number): string {
  const p = parseIp(address);
  return typeof p === "string" ? address : networkText(p.bytes, prefix);
}

/** The link's attributes with the wanted ones set (the rest are kept). */
function mergeAttrs(have: readonly Attr[] | undefined, want: readonly Attr[] | undefined) {
  if (!want?.length) return have ? [...have] : undefined;
  const m = new Map(have ?? []);
  for (const [n, v] of want) m.set(n, v);
  return [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const slot = (r: Route) => `${r.family} ${r.dst} ${r.dev} ${r.metric}`;

/**
 * The routes (every table) as the link lines leave them: see the module
 * comment. `before` are the links as read, `phase` the plan's prediction.
 */
export function predictRoutes(
  routes: readonly Route[],
  before: readonly Link[],
  phase: LinkPhase,
): Route[] {
  const nameByIndex = new Map(phase.predicted.map((l) => [l.index, l.name]));
  // The first link of each name, as a find over `before` would give.
  const indexByName = new Map<string, number>();
  for (const l of before) if (!indexByName.has(l.name)) indexByName.set(l.name, l.index);
  const renamed = (dev: string) => {
    const old = indexByName.get(dev);
    return old === undefined ? dev : (nameByIndex.get(old) ?? dev);
  };
  const impliedBefore = new Set(impliedKernelRoutes(before).map(slot));
  const impliedAfterList = impliedKernelRoutes(phase.predicted);
  const impliedAfter = new Set(impliedAfterList.map(slot));
  const out: Route[] = [];
  for (const r of routes) {
    if (phase.downed.has(r.dev)) continue;
    if (r.family === 6 && phase.ipv6Off.has(r.dev)) continue;
    const main = (r.table ?? TABLE_MAIN) === TABLE_MAIN;
    const dev = renamed(r.dev);
    // A route on a link that keeps its name is itself (a read's routes are
    // distinct objects, and nothing here changes one).
    const moved = dev === r.dev ? r : { ...r, dev };
    if (
      main &&
      r.protocol === "kernel" &&
      impliedBefore.has(slot(r)) &&
      !impliedAfter.has(slot(moved))
    )
      continue;
    out.push(moved);
  }
  // Slots of main routes, of the destinations an implied route has only.
  const impliedDsts = new Set(impliedAfterList.map((k) => k.dst));
  const present = new Set<string>();
  for (const r of out)
    if ((r.table ?? TABLE_MAIN) === TABLE_MAIN && impliedDsts.has(r.dst)) present.add(slot(r));
  const downedNow = new Set([...phase.downed].map((n) => renamed(n)));
  for (const k of impliedAfterList) {
    if (present.has(slot(k))) continue;
    // New prefix routes: of added addresses, or all of a link that went down and up.
    const priorName = phase.formerName.get(k.dev) ?? k.dev;
    const wasThere = impliedBefore.has(slot({ ...k, dev: priorName }));
    if (wasThere && !downedNow.has(k.dev)) continue;
    out.push({ ...k, table: TABLE_MAIN });
  }
  return out;
}
