/**
 * planNexthops: the operations that make the nexthop objects exactly the
 * desired ones, and what the link lines do to them first. Pure.
 *
 * Kernel facts (Linux 6.x, checked in a netns):
 * - `nexthop replace` changes an object in place: routes by it stay. It
 *   cannot turn a group into a single nexthop or back ("Can not replace a
 *   nexthop group with a nexthop"), so such an object is deleted and made
 *   again; so is one that changes family, blackhole, fdb or group type;
 * - deleting an object deletes every route by it and takes it out of every
 *   group (a group left empty goes, with its routes);
 * - a link going down (a rename takes it down) deletes the objects through
 *   it, as above; a multipath route loses only the paths through it, and
 *   only goes when all of its paths did.
 * So the objects are made before the routes that use them (singles before
 * the groups of them), and the stale ones deleted after every route
 * change, groups before their members.
 */
import type { Nexthop, Route } from "../model/model";
import { sameAttrs } from "../vocabulary/attrs";
import { NEXTHOP_ATTRS } from "../vocabulary/nexthop-attrs";

type NexthopOp =
  | { op: "replace"; nexthop: Nexthop }
  | { op: "delete"; nexthop: Nexthop; reason: "stale" | "recreate" };

export interface NexthopPlan {
  /** Before the routes: deletes of what is made anew, then replaces (singles, then groups). */
  heads: NexthopOp[];
  /** After the routes: deletes of stale objects, groups first. */
  tails: NexthopOp[];
  /** Ids deleted and made again by the heads: the routes by them are gone meanwhile. */
  recreated: Set<number>;
}

function sameGroup(a: Nexthop["group"], b: Nexthop["group"]): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  return a.every((m, i) => m.id === b[i]?.id && m.weight === b[i]?.weight);
}

/** Whether two objects are the same object (nothing to do). */
export function sameNexthop(a: Nexthop, b: Nexthop): boolean {
  return (
    a.id === b.id &&
    a.family === b.family &&
    a.gateway === b.gateway &&
    a.dev === b.dev &&
    a.onlink === b.onlink &&
    a.blackhole === b.blackhole &&
    sameGroup(a.group, b.group) &&
    a.protocol === b.protocol &&
    sameAttrs(NEXTHOP_ATTRS, a.attrs, b.attrs)
  );
}

const attr = (n: Nexthop, name: string) => n.attrs?.find(([k]) => k === name)?.[1];

/** Whether `replace` cannot turn `from` into `to`: the object must be deleted and made again. */
function needsRecreate(from: Nexthop, to: Nexthop): boolean {
  return (
    (from.group === undefined) !== (to.group === undefined) ||
    from.family !== to.family ||
    from.blackhole !== to.blackhole ||
    attr(from, "fdb") !== attr(to, "fdb") ||
    attr(from, "type") !== attr(to, "type")
  );
}

const groupsFirst = (a: Nexthop, b: Nexthop) =>
  Number(b.group !== undefined) - Number(a.group !== undefined);

export function planNexthops(
  current: readonly Nexthop[],
  desired: readonly Nexthop[],
): NexthopPlan {
  const now = new Map(current.map((n) => [n.id, n]));
  const want = new Map(desired.map((n) => [n.id, n]));
  const recreated = new Set<number>();
  for (const d of desired) {
    const c = now.get(d.id);
    if (c && needsRecreate(c, d)) recreated.add(d.id);
  }
  // A group that loses a member to a delete is not the group it was: made anew too.
  for (let grew = recreated.size > 0; grew; ) {
    grew = false;
    for (const c of current) {
      if (recreated.has(c.id) || !want.has(c.id)) continue;
      if (c.group?.some((m) => recreated.has(m.id))) {
        recreated.add(c.id);
        grew = true;
      }
    }
  }
  const heads: NexthopOp[] = [];
  for (const c of current.filter((x) => recreated.has(x.id)).sort(groupsFirst)) {
    heads.push({ op: "delete", nexthop: c, reason: "recreate" });
  }
  const changed = desired.filter((d) => {
    const c = now.get(d.id);
    return recreated.has(d.id) || c === undefined || !sameNexthop(c, d);
  });
  for (const d of changed) if (!d.group) heads.push({ op: "replace", nexthop: d });
  for (const d of changed) if (d.group) heads.push({ op: "replace", nexthop: d });
  // A group whose members the heads delete is gone with them: no delete of its own.
  const alive = new Set(withoutNexthops(current, recreated).map((n) => n.id));
  const tails: NexthopOp[] = current
    .filter((c) => !want.has(c.id) && alive.has(c.id))
    .sort(groupsFirst)
    .map((c) => ({ op: "delete", nexthop: c, reason: "stale" }));
  return { heads, tails, recreated };
}

/** The objects as they are once `gone` ids are deleted: members dropped, empty groups gone too. */
export function withoutNexthops(
  nexthops: readonly Nexthop[],
  gone: ReadonlySet<number>,
): Nexthop[] {
  const dead = new Set(gone);
  const out: Nexthop[] = [];
  for (const n of nexthops) {
    if (dead.has(n.id)) continue;
    if (!n.group) {
      out.push(n);
      continue;
    }
    const group = n.group.filter((m) => !dead.has(m.id));
    if (group.length === 0) dead.add(n.id);
    else out.push(group.length === n.group.length ? n : { ...n, group });
  }
  return out;
}

export interface LinkChanges {
  /** Current names of the links that go down. */
  downed: ReadonlySet<string>;
  /** A link's name afterwards, by its current name. */
  renamed(dev: string): string;
}

/**
 * The objects and routes as the link lines leave them (module comment):
 * objects through a link that goes down are deleted, with the routes by
 * them; a multipath route goes when every path's link did, else keeps its
 * paths under the links' new names. `routes` are as planLinkPhase's
 * predictRoutes leaves them (which knows single-link routes only).
 */
export function afterLinkChanges(
  nexthops: readonly Nexthop[],
  routes: readonly Route[],
  links: LinkChanges,
): { nexthops: Nexthop[]; routes: Route[] } {
  const gone = new Set(nexthops.filter((n) => n.dev && links.downed.has(n.dev)).map((n) => n.id));
  const kept = withoutNexthops(nexthops, gone).map((n) =>
    n.dev ? { ...n, dev: links.renamed(n.dev) } : n,
  );
  const ids = new Set(kept.map((n) => n.id));
  const out: Route[] = [];
  for (const r of routes) {
    if (r.nhid !== undefined && !ids.has(r.nhid)) continue;
    if (r.hops) {
      if (r.hops.every((h) => links.downed.has(h.dev))) continue;
      out.push({ ...r, hops: r.hops.map((h) => ({ ...h, dev: links.renamed(h.dev) })) });
      continue;
    }
    out.push(r);
  }
  return { nexthops: kept, routes: out };
}
