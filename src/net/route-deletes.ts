/**
 * What a `route del` may remove besides the route it was rendered for: the
 * kernel deletes the first route matching what the line names. A restore
 * plans around it (plan-routes.ts). Pure.
 */
import { type Route, routeKey } from "./model";
import type { IdentityIndex } from "./route-index";

/**
 * Routes that stay but that a delete of a route that goes would hit: `route
 * del` names only what a route has (no "without a source"), and the kernel
 * deletes the first route that matches. A restore deletes these too and
 * puts them back. Closed: their own deletes may hit others.
 */
export function hitByDeletes(managed: readonly Route[], keep: IdentityIndex): Set<Route> {
  const hit = new Set<Route>();
  let goes = managed.filter((r) => !keep.has(r));
  while (goes.length > 0) {
    const next: Route[] = [];
    for (const r of managed) {
      if (hit.has(r) || !keep.has(r)) continue;
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
