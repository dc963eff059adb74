/**
 * planRoutes: the ordered operations that turn the current main table into
 * the desired one. Pure; property-tested against a model of the kernel.
 *
 * Rules (shared/DESIGN.md, "UpdateRoutes"):
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
 *   overwrite a link route come last of all replaces, for the same reason;
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
 */
import type { Route } from "./model";
import { hitByDeletes } from "./route-deletes";
import { IdentityIndex, KeyMap } from "./route-index";
import { isManagedLink } from "./vocabulary/links";

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
  return isManagedLink(r.dev) && !(keepLinkless && r.dev === "");
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

  // Identities are compared field by field among routes of the same
  // destination (route-index.ts): no identity string is built.
  const recreate = restore
    ? hitByDeletes(managed, new IdentityIndex(target, exact))
    : new Set<Route>();
  const kept = recreate.size === 0 ? managed : managed.filter((r) => !recreate.has(r));
  // One index, of the current routes: each target route looked up once
  // tells whether it is in place and which current routes stay.
  const inCurrent = new IdentityIndex(kept, exact);
  // Only ever asked of managed routes (callers check `owned` first).
  const staying = new Set<Route>();
  const inPlace = target.map((r) => inCurrent.addMatches(r, staying));
  const stays = (r: Route) => staying.has(r);

  // Current routes by key: `replace` overwrites within a key, whatever the
  // link. Built when a route is missing (a call that changes nothing needs none).
  let byKeyMap: KeyMap<Route[]> | undefined;
  const byKey = () => {
    if (byKeyMap) return byKeyMap;
    byKeyMap = new KeyMap();
    for (const r of current) {
      const list = byKeyMap.get(r);
      if (list) list.push(r);
      else byKeyMap.set(r, [r]);
    }
    return byKeyMap;
  };
  // `replace` overwrites the first route with its key, whatever its link. A
  // route of another link that goes (stale, or superseded on its own link)
  // stays until the deletes at the end: that link's gateways may be reached
  // through it meanwhile. So a route whose victim is on another link is
  // appended instead, and the victim deleted by name last.
  const keptUntilEnd = (victim: Route, by: Route) => !exact && victim.dev !== by.dev;
  // Keys held by a route that stays: a `replace` there would overwrite it.
  let heldSet: KeyMap<true> | undefined;
  const held = () => {
    if (heldSet) return heldSet;
    heldSet = new KeyMap();
    for (const r of staying) heldSet.set(r, true);
    return heldSet;
  };
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
    if (inPlace[i]) continue;
    const sameKey = byKey().get(route) ?? [];
    let ops = route.gateway ? withGateway : withoutGateway;
    let op: RouteOp;
    const isHeld = held().get(route) === true;
    // A restore deletes every route it does not keep first: nothing left to overwrite.
    const victim = isHeld || restore ? undefined : firstWithKey(sameKey, route);
    if (isHeld || (victim && keptUntilEnd(victim, route))) {
      held().set(route, true);
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
      held().set(route, true);
      op = { op: "replace", route };
      if (victim) {
        overwritten.add(victim);
        op = { ...op, overwrites: victim };
        if (route.gateway && !victim.gateway) ops = overwritingLinkRoutes;
      }
    }
    ops.push(op);
  }

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
