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
 *   gateway is reachable when its route is added;
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
}

function isManaged(r: Route): boolean {
  return r.dev !== "lo";
}

export function planRoutes(
  current: readonly Route[],
  desired: readonly Route[],
  options: PlanOptions = {},
): RouteOp[] {
  const exact = options.exact === true;
  const managed = current.filter(isManaged);
  const currentIds = new Set(managed.map((r) => routeIdentity(r, exact)));
  const desiredIds = new Set(desired.map((r) => routeIdentity(r, exact)));
  const desiredKeys = new Set(desired.map(routeKey));
  const desiredDstDev = new Set(desired.map((r) => `${r.family} ${r.dst} ${r.dev}`));

  const withoutGateway: RouteOp[] = [];
  const withGateway: RouteOp[] = [];
  for (const route of desired) {
    if (currentIds.has(routeIdentity(route, exact))) continue;
    (route.gateway ? withGateway : withoutGateway).push({ op: "replace", route });
  }

  const superseded: RouteOp[] = [];
  const stale: RouteOp[] = [];
  for (const route of managed) {
    if (desiredIds.has(routeIdentity(route, exact))) continue;
    // `replace` of a desired route with the same key overwrites this one.
    if (desiredKeys.has(routeKey(route))) continue;
    if (!exact && route.protocol === "kernel") {
      if (desiredDstDev.has(`${route.family} ${route.dst} ${route.dev}`)) {
        superseded.push({ op: "delete", route, reason: "superseded" });
      }
      continue;
    }
    stale.push({ op: "delete", route, reason: "stale" });
  }
  return [...withoutGateway, ...withGateway, ...superseded, ...stale];
}
