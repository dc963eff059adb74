/**
 * planRoutes: the ordered operations that turn the current main table into
 * the desired one. Pure; property-tested against a model of the kernel.
 *
 * Rules (shared/DESIGN.md, "UpdateRoutes"):
 * - the desired list is the whole main table for every link but `lo`;
 * - a desired route equal to a current one costs nothing;
 * - a desired route supersedes a kernel-made route with the same destination
 *   on the same link (or with the same kernel key, which `replace` overwrites
 *   anyway). IPv4 keys match (metric 0), so `replace` overwrites it; IPv6
 *   kernel prefix routes have metric 256 and user routes 1024, so the kernel
 *   route is deleted explicitly once the requested one is in place;
 * - routes without a gateway are put in place before gateway routes, so every
 *   gateway is reachable when its route is added; gateway routes that
 *   overwrite a link route come last of all replaces, for the same reason;
 * - every other non-kernel route is stale and deleted last: no window without
 *   routes;
 * - several routes may share a key when they are on different links (the
 *   kernel makes a prefix route per link, even for the same subnet, and
 *   fe80::/64 on every link), and `replace` overwrites the FIRST route with
 *   its key whatever its link. So a route whose key is held by a route that
 *   stays is added with `append`, and only the route a `replace` really
 *   overwrites is spared an explicit delete. IPv6 cannot hold two routes
 *   with the same key, link and gateway: such a leftover is deleted just
 *   before the append, the one delete that is not last.
 */
import { type Route, routeIdentity, routeKey } from "./model";

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
}

function isManaged(r: Route): boolean {
  return r.dev !== "lo";
}

const dstDev = (r: Route) => `${r.family} ${r.dst} ${r.dev}`;

export function planRoutes(
  current: readonly Route[],
  desired: readonly Route[],
  options: PlanOptions = {},
): RouteOp[] {
  const exact = options.exact === true;
  const desiredKeys = new Set(desired.map(routeKey));
  const desiredDstDev = new Set(desired.map(dstDev));
  const supersedes = (k: Route) => desiredDstDev.has(dstDev(k)) || desiredKeys.has(routeKey(k));
  const kernel = exact ? [] : (options.kernel ?? []).filter((k) => isManaged(k) && !supersedes(k));
  const target = [...kernel, ...desired];

  const managed = current.filter(isManaged);
  const currentIds = new Set(managed.map((r) => routeIdentity(r, exact)));
  const targetIds = new Set(target.map((r) => routeIdentity(r, exact)));

  // Current routes by key: `replace` overwrites within a key, whatever the link.
  const byKey = new Map<string, Route[]>();
  for (const r of current) {
    const k = routeKey(r);
    const list = byKey.get(k);
    if (list) list.push(r);
    else byKey.set(k, [r]);
  }
  // Keys held by a route that stays: a `replace` there would overwrite it.
  const held = new Set(managed.filter((r) => targetIds.has(routeIdentity(r, exact))).map(routeKey));
  // Current routes the plan already accounts for (overwritten or deleted early).
  const overwritten = new Set<Route>();
  const withoutGateway: RouteOp[] = [];
  const withGateway: RouteOp[] = [];
  // A gateway route overwriting a route without one (the PTP subnet route)
  // may take away what makes other gateways reachable: those go last.
  const overwritingLinkRoutes: RouteOp[] = [];
  for (const route of target) {
    if (currentIds.has(routeIdentity(route, exact))) continue;
    const key = routeKey(route);
    const sameKey = byKey.get(key) ?? [];
    let ops = route.gateway ? withGateway : withoutGateway;
    let op: RouteOp;
    if (held.has(key)) {
      // IPv6 refuses a second route with the same key, link and gateway
      // ("File exists") and `replace` cannot choose what it overwrites, so
      // a leftover twin goes just before the append (the only early delete).
      const twin =
        route.family === 6
          ? sameKey.find(
              (r) =>
                isManaged(r) &&
                r.dev === route.dev &&
                r.gateway === route.gateway &&
                !targetIds.has(routeIdentity(r, exact)) &&
                !overwritten.has(r),
            )
          : undefined;
      if (twin) {
        overwritten.add(twin);
        ops.push({ op: "delete", route: twin, reason: "superseded" });
      }
      op = { op: "append", route };
    } else {
      const victim = firstWithKey(sameKey, route);
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

  const superseded: RouteOp[] = [];
  const stale: RouteOp[] = [];
  for (const route of managed) {
    if (targetIds.has(routeIdentity(route, exact))) continue;
    if (overwritten.has(route)) continue;
    if (!exact && route.protocol === "kernel") {
      if (supersedes(route)) superseded.push({ op: "delete", route, reason: "superseded" });
      continue;
    }
    stale.push({ op: "delete", route, reason: "stale" });
  }
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
