/**
 * planRoutes: the ordered operations that turn the current main table into
 * the desired one. Pure; property-tested against a model of the kernel.
 *
 * Rules (docs/network-calls.md, UpdateRoutes):
 * - the desired list is the whole main table for every link but `lo`
 *   (with `keepLinkless`, routes through no link are left alone: {@link isManaged});
 * - a desired route equal to a current one costs nothing;
 * - a desired route supersedes a kernel-made route with the same destination
 *   on the same link, and only that one: the twin another link in the same
 *   subnet has stays (its key held, the request goes in with `append`).
 *   IPv4 keys match (metric 0), so `replace` overwrites it; IPv6 kernel
 *   prefix routes have metric 256 and user routes 1024, so the kernel route
 *   is deleted explicitly once the requested one is in place;
 * - routes without a gateway are put in place before gateway routes, so every
 *   gateway is reachable when its route is added; gateway routes that
 *   overwrite a link route come after the other gateway routes, for the
 *   same reason; IPv4 anycast, multicast and broadcast routes come last of
 *   all additions (a gateway check stops at them: route-missing.ts);
 * - every other non-kernel route is stale and deleted last: no window without
 *   routes (a rollback, `deletesFirst`, deletes first: see the end of planRoutes);
 * - several routes may share a key when they are on different links (the
 *   kernel makes a prefix route per link, even for the same subnet, and
 *   fe80::/64 on every link), and `replace` overwrites the FIRST route with
 *   its key whatever its link. So a route whose key is held by a route that
 *   stays is added with `append`, and only the route a `replace` really
 *   overwrites is spared an explicit delete. IPv6 cannot hold two routes
 *   with the same key, link and gateway: such a leftover is deleted just
 *   before the append, the one delete that is not last.
 *
 * How each missing route goes in: route-missing.ts.
 */
import { hasGateway, type Route } from "../../model/model";
import { isManagedLink } from "../../vocabulary/links";
import { deleteConflicts, hitByDeletes } from "./route-deletes";
import { type KeyGroup, keyGroups, needsRebuild } from "./route-groups";
import { IdentityIndex, KeyMap, sameIdentity } from "./route-index";
import { MissingRoutes, stopsGatewayChecks } from "./route-missing";
import type { RouteOp } from "./route-op";
import { PlanIndex } from "./route-plan-index";
import { supersedeCheck } from "./route-supersede";

export type { RouteOp };

export interface PlanOptions {
  /**
   * Restore mode: the desired list is the exact table, kernel routes
   * included and protocol compared; nothing is kept that is not listed.
   */
  exact?: boolean;
  /**
   * The prefix routes the kernel makes for the links' addresses
   * (impliedKernelRoutes). Those that no desired route supersedes are put
   * back when missing, so the result does not depend on earlier calls.
   */
  kernel?: readonly Route[];
  /** Leave routes through no link alone ({@link isManaged}). */
  keepLinkless?: boolean;
  /**
   * With `exact`, for a rollback: delete every route not kept first (and the
   * kept ones such a delete could hit), then add what is missing. Slower to
   * converge (a window), but each delete hits exactly what it names.
   */
  deletesFirst?: boolean;
}

/**
 * Whether a plan owns a route: every route but those through `lo`; with
 * `keepLinkless` (Kata's UpdateRoutes) also not the routes through no link
 * (blackhole, unreachable, prohibit, throw; IPv4 shows them without a
 * device, IPv6 on `lo`), so both families keep theirs: a Kata request
 * cannot name one (every route needs a device), so the request, the whole
 * desired table of the links, says nothing of them.
 */
export function isManaged(r: Route, keepLinkless = false): boolean {
  return isManagedLink(r.dev) && !(keepLinkless && r.dev === "");
}

const NONE: readonly Route[] = [];

export function planRoutes(
  current: readonly Route[],
  desired: readonly Route[],
  options: PlanOptions = {},
): RouteOp[] {
  // A delete at the end that would hit a route the plan keeps or puts in
  // before it (a route it cannot tell apart: no "without metrics"; IPv6
  // takes a route by a nexthop object first) gets its key rebuilt instead,
  // as an out-of-order group; planned again until none is left (each pass
  // takes at least one key's deletes out of the end).
  const rebuild = new KeyMap<true>();
  for (;;) {
    const { ops, conflicts } = planOnce(current, desired, options, rebuild);
    if (conflicts.length === 0) return ops;
    for (const r of conflicts) rebuild.set(r, true);
  }
}

/** What one pass plans toward, and what it may touch. */
interface Scope {
  exact: boolean;
  /** A rollback: every route not kept deleted first (`deletesFirst`). */
  restore: boolean;
  owned: (r: Route) => boolean;
  /** The current routes the plan owns, in the kernel's order. */
  managed: readonly Route[];
  supersedes: (k: Route) => boolean;
  /** The kernel routes to keep or put back, then the desired ones. */
  target: Route[];
}

function scopeOf(
  current: readonly Route[],
  desired: readonly Route[],
  options: PlanOptions,
): Scope {
  const exact = options.exact === true;
  const keepLinkless = options.keepLinkless === true;
  const owned = (r: Route) => isManaged(r, keepLinkless);
  // Most calls own every route: no copy then.
  const managed = current.every(owned) ? current : current.filter(owned);
  const supersedes = supersedeCheck(desired, [options.kernel ?? NONE, managed]);
  const kernel = exact ? [] : (options.kernel ?? []).filter((k) => owned(k) && !supersedes(k));
  const restore = exact && options.deletesFirst === true;
  return { exact, restore, owned, managed, supersedes, target: [...kernel, ...desired] };
}

function planOnce(
  current: readonly Route[],
  desired: readonly Route[],
  options: PlanOptions,
  rebuild: KeyMap<true>,
): { ops: RouteOp[]; conflicts: Route[] } {
  const scope = scopeOf(current, desired, options);
  const { exact, restore, owned, managed, target } = scope;
  // The table as it is, route for route in the target's order (a read-back
  // after a change: the request lists what Get listed): nothing is missing,
  // every route stays, and a key's routes are in the target's order, so
  // the plan is empty. Found by one walk, without indexing anything.
  if (rebuild.size === 0 && sameList(managed, target, exact)) return { ops: [], conflicts: [] };

  // Identities are compared field by field among routes of the same
  // destination (route-index.ts): no identity string is built.
  const recreate = restore
    ? hitByDeletes(managed, new IdentityIndex(target, exact))
    : new Set<Route>();
  // One index by destination (route-plan-index.ts): each target route looked
  // up once tells whether it is in place and which current routes stay; the
  // current routes by key (`replace` overwrites within a key, whatever the
  // link) and the target's count per destination come from it too.
  const index = new PlanIndex({
    current,
    kept: recreate.size === 0 ? owned : (r) => owned(r) && !recreate.has(r),
    target,
    withProtocol: exact,
  });
  const staying = new Set<Route>();
  const inPlace = target.map((r) => index.addMatches(r, staying));
  const missing = new MissingRoutes(scope, index, staying);
  const { overwritten, withoutGateway, withGateway } = missing;
  // A restore emits routes without a gateway first; it decides append or
  // replace in that order too (a forward plan's order is settled below).
  const indices = target.map((_, i) => i);
  const order = restore
    ? [
        ...indices.filter((i) => !hasGateway(target[i] as Route)),
        ...indices.filter((i) => hasGateway(target[i] as Route)),
      ]
    : indices;

  // Routes of one key go in together; IPv4's in the desired order (route-groups.ts).
  const groups = index.shared
    ? keyGroups(target, hasGateway, index.counts)
    : new Map<number, KeyGroup>();
  const done = new Set<KeyGroup>();
  let position: Map<Route, number> | undefined;
  const positionOf = (r: Route) => {
    position ??= new Map(current.map((c, n) => [c, n]));
    return position.get(r) ?? -1;
  };
  // Where a group's routes in place are: each the first current route of its
  // identity no earlier member took (twins that differ in what is not compared).
  const taken = new Set<Route>();
  const targetPosition = (k: number) => {
    if (!inPlace[k]) return undefined;
    const m = index.matches(target[k] as Route).find((c) => !taken.has(c));
    if (m === undefined) return undefined;
    taken.add(m);
    return positionOf(m);
  };
  for (const i of order) {
    const route = target[i] as Route;
    const group =
      (groups.size > 0 ? groups.get(i) : undefined) ??
      (rebuild.size > 0 && rebuild.get(route)
        ? { members: [i], ordered: true, together: true }
        : undefined);
    if (group === undefined) {
      // A route alone in its key may wait for the gateway routes; one of a
      // group goes with the group (its append or replace is decided in order).
      if (!inPlace[i])
        missing.one(route, stopsGatewayChecks(route) ? missing.afterGateways : undefined);
      continue;
    }
    if (done.has(group)) continue;
    done.add(group);
    const first = target[group.members[0] as number] as Route;
    // A group of one kind goes in together, in one bucket, in its order:
    // decided where it is emitted, so no append lands before a replace of
    // its key. A mixed one goes route by route in its own buckets, those
    // without a gateway decided (and added) first; rebuilt, with the
    // gateway routes.
    const bucket = group.members.some((k) => hasGateway(target[k] as Route))
      ? withGateway
      : withoutGateway;
    if (rebuild.get(first) || (group.ordered && needsRebuild(group.members, targetPosition))) {
      for (const r of index.sameKey(first)) {
        if (!owned(r) || overwritten.has(r)) continue;
        overwritten.add(r);
        bucket.push({ op: "delete", route: r, reason: "stale" });
      }
      group.members.forEach((k, n) => {
        const r = target[k] as Route;
        missing.held().set(r, true);
        bucket.push(n === 0 ? { op: "replace", route: r } : { op: "append", route: r });
      });
      continue;
    }
    for (const k of group.members) {
      if (!inPlace[k]) missing.one(target[k] as Route, group.together ? bucket : undefined);
    }
  }
  return finish(scope, missing, staying, recreate, (r) =>
    deleteConflicts(r, (x) => index.sameKey(x).filter(owned), positionOf).filter(
      (c) => rebuild.get(c) !== true,
    ),
  );
}

/**
 * The deletes at the end (routes superseded, then stale ones) and the
 * plan in its order; `conflicts` names the deletes that would hit a route
 * the plan keeps or puts in before them.
 */
function finish(
  scope: Scope,
  missing: MissingRoutes,
  staying: ReadonlySet<Route>,
  recreate: ReadonlySet<Route>,
  conflicts: (ops: RouteOp[]) => Route[],
): { ops: RouteOp[]; conflicts: Route[] } {
  const { exact, restore, managed, supersedes } = scope;
  const { overwritten, withoutGateway, withGateway, overwritingLinkRoutes, afterGateways } =
    missing;
  const superseded: RouteOp[] = [];
  const stale: RouteOp[] = [];
  const inOrder =
    recreate.size === 0 ? managed : [...recreate, ...managed.filter((r) => !recreate.has(r))];
  for (const route of inOrder) {
    if (overwritten.has(route)) continue;
    if (staying.has(route) || recreate.has(route)) {
      if (recreate.has(route)) stale.push({ op: "delete", route, reason: "stale" });
      continue;
    }
    if (!exact && route.protocol === "kernel") {
      if (supersedes(route)) superseded.push({ op: "delete", route, reason: "superseded" });
      continue;
    }
    stale.push({ op: "delete", route, reason: "stale" });
  }
  // A rollback (deletesFirst) deletes every route it does not keep first, then adds
  // what is missing (nothing left to overwrite): a delete names a route by
  // what it has, so one without a source would hit a twin with one (same
  // key and link) that a replace had just put back, and a replace planned
  // to overwrite a route may run after that route's twin was appended. The
  // table is already wrong then; a window matters less than getting back
  // exactly.
  if (restore) {
    return {
      ops: [
        ...stale,
        ...withoutGateway,
        ...withGateway,
        ...overwritingLinkRoutes,
        ...afterGateways,
      ],
      conflicts: [],
    };
  }
  const ops = [
    ...withoutGateway,
    ...withGateway,
    ...overwritingLinkRoutes,
    ...afterGateways,
    ...superseded,
    ...stale,
  ];
  return { ops, conflicts: ops.some((o) => o.op === "delete") ? conflicts(ops) : [] };
}

/** Whether the two lists have routes of the same identities in the same order. */
function sameList(a: readonly Route[], b: readonly Route[], withProtocol: boolean): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++)
    if (!sameIdentity(a[i] as Route, b[i] as Route, withProtocol)) return false;
  return true;
}
