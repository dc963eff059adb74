/**
 * planRoutes as it was before identities were compared field by field
 * (commit 3332015, src/net/plan-routes.ts): the oracle the faster planner is
 * held to in net-plan-routes-oracle.test.ts. Not used by the agent.
 */
import { type Route, routeIdentity, routeKey } from "../../../src/net/model/model";

export type RouteOp =
  /** `overwrites`: the current route the kernel will overwrite (same key), if any. */
  | { op: "replace"; route: Route; overwrites?: Route }
  | { op: "append"; route: Route }
  | { op: "delete"; route: Route; reason: "superseded" | "stale" };

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
  return r.dev !== "lo" && !(keepLinkless && r.dev === "");
}

const dstDev = (r: Route) => `${r.family} ${r.dst} ${r.dev}`;

/**
 * Whether a desired route has the destination and link of route `k`. Asked
 * of kernel routes, a handful (the `candidates`): the desired routes are
 * sifted by destination against those first (their `dst` strings are
 * hashed already), so 10,000 desired routes build no key each. Any other
 * route is answered by a scan.
 */
function supersedeCheck(
  desired: readonly Route[],
  candidates: readonly Route[],
): (k: Route) => boolean {
  const dsts = new Set<string>();
  for (const c of candidates) if (c.protocol === "kernel") dsts.add(c.dst);
  const desiredDstDev = new Set<string>();
  for (const r of desired) if (dsts.has(r.dst)) desiredDstDev.add(dstDev(r));
  return (k) =>
    dsts.has(k.dst)
      ? desiredDstDev.has(dstDev(k))
      : desired.some((r) => r.family === k.family && r.dst === k.dst && r.dev === k.dev);
}

export function planRoutes(
  current: readonly Route[],
  desired: readonly Route[],
  options: PlanOptions = {},
): RouteOp[] {
  const exact = options.exact === true;
  const keepLinkless = options.keepLinkless === true;
  const restore = exact && options.deletesFirst === true;
  const owned = (r: Route) => isManaged(r, keepLinkless);
  const managed = current.filter(owned);
  const supersedes = supersedeCheck(desired, [...(options.kernel ?? []), ...managed]);
  const kernel = exact ? [] : (options.kernel ?? []).filter((k) => owned(k) && !supersedes(k));
  const target = [...kernel, ...desired];

  // Each route's identity is built once (10,000 routes: building and hashing
  // these strings was most of a no-change plan's time).
  const targetIdList = target.map((r) => routeIdentity(r, exact));
  const targetIds = new Set(targetIdList);
  const managedIds = managed.map((r) => routeIdentity(r, exact));
  const recreate = restore ? hitByDeletes(managed, targetIds) : new Set<Route>();
  // Only ever asked of managed routes (callers check `owned` first).
  const staying = new Set<Route>();
  const currentIds = new Set<string>();
  managed.forEach((r, i) => {
    if (recreate.has(r)) return;
    const id = managedIds[i] as string;
    currentIds.add(id);
    if (targetIds.has(id)) staying.add(r);
  });
  const stays = (r: Route) => staying.has(r);

  // Current routes by key: `replace` overwrites within a key, whatever the link.
  const byKey = byKeyOf(current);
  // `replace` overwrites the first route with its key, whatever its link. A
  // route of another link that goes (stale, or superseded on its own link)
  // stays until the deletes at the end: that link's gateways may be reached
  // through it meanwhile. So a route whose victim is on another link is
  // appended instead, and the victim deleted by name last.
  const keptUntilEnd = (victim: Route, by: Route) => !exact && victim.dev !== by.dev;
  // Keys held by a route that stays: a `replace` there would overwrite it.
  const held = new Set<string>();
  for (const r of staying) held.add(routeKey(r));
  // Current routes the plan already accounts for (overwritten or deleted early).
  const overwritten = new Set<Route>();
  const withoutGateway: RouteOp[] = [];
  const withGateway: RouteOp[] = [];
  // A gateway route overwriting a route without one (the PTP subnet route)
  // may take away what makes other gateways reachable: those go last.
  const overwritingLinkRoutes: RouteOp[] = [];
  // A restore emits routes without a gateway first; it decides append or
  // replace in that order too (a forward plan's order is settled below).
  const indices = target.map((_, i) => i);
  const order = restore
    ? [...indices.filter((i) => !target[i]?.gateway), ...indices.filter((i) => target[i]?.gateway)]
    : indices;
  for (const i of order) {
    const route = target[i] as Route;
    if (currentIds.has(targetIdList[i] as string)) continue;
    const key = routeKey(route);
    const sameKey = byKey.get(key) ?? [];
    let ops = route.gateway ? withGateway : withoutGateway;
    let op: RouteOp;
    // A restore deletes every route it does not keep first: nothing left to overwrite.
    const victim = held.has(key) || restore ? undefined : firstWithKey(sameKey, route);
    if (held.has(key) || (victim && keptUntilEnd(victim, route))) {
      held.add(key);
      // IPv6 refuses a second route with the same key, link and gateway
      // ("File exists") and `replace` cannot choose what it overwrites, so
      // a leftover twin goes just before the append (the only early delete).
      // An IPv6 delete compares no source and, without a gateway, no
      // gateway: every leaving route of that key and link goes with it,
      // those with a gateway first, so each delete hits what it names.
      const leaving =
        route.family === 6 && !restore
          ? sameKey.filter(
              (r) => owned(r) && r.dev === route.dev && !stays(r) && !overwritten.has(r),
            )
          : [];
      if (leaving.some((r) => r.gateway === route.gateway)) {
        leaving.sort((a, b) => Number(a.gateway === undefined) - Number(b.gateway === undefined));
        for (const twin of leaving) {
          overwritten.add(twin);
          ops.push({ op: "delete", route: twin, reason: "superseded" });
        }
      }
      op = { op: "append", route };
    } else {
      held.add(key);
      op = { op: "replace", route };
      if (victim) {
        overwritten.add(victim);
        op = { ...op, overwrites: victim };
        if (route.gateway && !victim.gateway) ops = overwritingLinkRoutes;
      }
    }
    ops.push(op);
  }

  return finish({
    exact,
    restore,
    managed,
    recreate,
    stays,
    overwritten,
    supersedes,
    withoutGateway,
    withGateway,
    overwritingLinkRoutes,
  });
}

/** The routes by key (routeKey), each key's in their order. */
function byKeyOf(routes: readonly Route[]): Map<string, Route[]> {
  const byKey = new Map<string, Route[]>();
  for (const r of routes) {
    const k = routeKey(r);
    const list = byKey.get(k);
    if (list) list.push(r);
    else byKey.set(k, [r]);
  }
  return byKey;
}

/** The deletes at the end (routes superseded, then stale ones) and the plan in its order. */
function finish(p: {
  exact: boolean;
  restore: boolean;
  managed: readonly Route[];
  recreate: ReadonlySet<Route>;
  stays: (r: Route) => boolean;
  overwritten: ReadonlySet<Route>;
  supersedes: (k: Route) => boolean;
  withoutGateway: RouteOp[];
  withGateway: RouteOp[];
  overwritingLinkRoutes: RouteOp[];
}): RouteOp[] {
  const { exact, restore, managed, recreate, stays, overwritten, supersedes } = p;
  const { withoutGateway, withGateway, overwritingLinkRoutes } = p;
  const superseded: RouteOp[] = [];
  const stale: RouteOp[] = [];
  for (const route of [...recreate, ...managed.filter((r) => !recreate.has(r))]) {
    if (stays(route) || recreate.has(route)) {
      if (recreate.has(route)) stale.push({ op: "delete", route, reason: "stale" });
      continue;
    }
    if (overwritten.has(route)) continue;
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
  if (restore) return [...stale, ...withoutGateway, ...withGateway, ...overwritingLinkRoutes];
  return [...withoutGateway, ...withGateway, ...overwritingLinkRoutes, ...superseded, ...stale];
}

/**
 * The route `replace` of `route` overwrites, among the current routes with
 * its key: the first (IPv6 prefers one that, like it, has or lacks a
 * gateway: fib6_add_rt2node).
 */
function firstWithKey(same: readonly Route[], route: Route): Route | undefined {
  if (route.family === 6) {
    const like = same.find((r) => (r.gateway !== undefined) === (route.gateway !== undefined));
    if (like) return like;
  }
  return same[0];
}

/**
 * The table after the first `count` operations of `ops` (planned against
 * `current`) went through: what a batch that stopped there left behind, by
 * the planner's own account. Used to plan a restore when the table cannot
 * be read.
 */
export function routesAfter(
  current: readonly Route[],
  ops: readonly RouteOp[],
  count: number,
): Route[] {
  const gone = new Set<Route>();
  const added: Route[] = [];
  for (const op of ops.slice(0, count)) {
    if (op.op === "delete") {
      gone.add(op.route);
      continue;
    }
    if (op.op === "replace" && op.overwrites) gone.add(op.overwrites);
    added.push(op.route);
  }
  return [...current.filter((r) => !gone.has(r)), ...added];
}

/**
 * Routes that stay but that a delete of a route that goes would hit: `route
 * del` names only what a route has (no "without a source"), and the kernel
 * deletes the first route that matches. A restore deletes these too and
 * puts them back. Closed: their own deletes may hit others.
 */
function hitByDeletes(managed: readonly Route[], keep: ReadonlySet<string>): Set<Route> {
  const hit = new Set<Route>();
  let goes = managed.filter((r) => !keep.has(routeIdentity(r, true)));
  while (goes.length > 0) {
    const next: Route[] = [];
    for (const r of managed) {
      if (hit.has(r) || !keep.has(routeIdentity(r, true))) continue;
      if (goes.some((d) => deleteMatches(d, r))) {
        hit.add(r);
        next.push(r);
      }
    }
    goes = next;
  }
  return hit;
}

/** Whether `route del` rendered for `d` (render-batch) may remove `r` instead. */
function deleteMatches(d: Route, r: Route): boolean {
  const v4 = d.family === 4;
  return (
    d !== r &&
    d.type === r.type &&
    routeKey(d) === routeKey(r) &&
    d.dev === r.dev &&
    d.protocol === r.protocol &&
    (d.gateway === undefined || d.gateway === r.gateway) &&
    // IPv6 deletes compare neither scope nor source (ip6_route_del).
    (!v4 || d.scope === r.scope) &&
    (!v4 || d.prefsrc === undefined || d.prefsrc === r.prefsrc)
  );
}
