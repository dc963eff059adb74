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
 *   routes.
 */
import { type Route, routeIdentity, routeKey } from "./model";

export type RouteOp =
  | { op: "replace"; route: Route }
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
  const targetKeys = new Set(target.map(routeKey));

  // Keys of current routes without a gateway: a gateway route replacing one
  // of them (the PTP subnet route) may take away the route that makes other
  // gateways reachable, so such overwrites go after the other gateway routes.
  const linkRouteKeys = new Set(managed.filter((r) => !r.gateway).map(routeKey));
  const withoutGateway: RouteOp[] = [];
  const withGateway: RouteOp[] = [];
  const overwritingLinkRoutes: RouteOp[] = [];
  for (const route of target) {
    if (currentIds.has(routeIdentity(route, exact))) continue;
    const op: RouteOp = { op: "replace", route };
    if (!route.gateway) withoutGateway.push(op);
    else if (linkRouteKeys.has(routeKey(route))) overwritingLinkRoutes.push(op);
    else withGateway.push(op);
  }

  const superseded: RouteOp[] = [];
  const stale: RouteOp[] = [];
  for (const route of managed) {
    if (targetIds.has(routeIdentity(route, exact))) continue;
    // `replace` of a target route with the same key overwrites this one.
    if (targetKeys.has(routeKey(route))) continue;
    if (!exact && route.protocol === "kernel") {
      if (supersedes(route)) superseded.push({ op: "delete", route, reason: "superseded" });
      continue;
    }
    stale.push({ op: "delete", route, reason: "stale" });
  }
  return [...withoutGateway, ...withGateway, ...overwritingLinkRoutes, ...superseded, ...stale];
}
