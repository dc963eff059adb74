/**
 * What a `route del` may remove besides the route it was rendered for: the
 * kernel deletes the first route matching what the line names. A restore
 * plans around it (plan-routes.ts). Pure.
 */
import { hopsText, type Route, routeKey } from "../../model/model";
import { sameIdentity } from "./route-index";
import type { RouteOp } from "./route-op";

/** Whether the kernel keeps two routes as the same (IPv6 has no scope: it keeps universe). */
function kernelSame(a: Route, b: Route): boolean {
  return a.family === 6
    ? sameIdentity({ ...a, scope: 0 }, { ...b, scope: 0 }, true)
    : sameIdentity(a, b, true);
}

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

/**
 * Whether `route del` rendered for `d` (render-batch) may remove `r`
 * instead, when `r` comes first. IPv4 (fib_table_delete) compares the
 * type when the line names one (not for unicast), scope, source, protocol, the paths or nexthop object, and the metrics
 * and realms the line gives. IPv6 (ip6_route_del) compares metric and
 * protocol, then takes a route by a nexthop object whatever the line
 * says of links (unless it names another object), else link and gateway
 * as given; no type, scope, source or metrics.
 */
function deleteMatches(d: Route, r: Route): boolean {
  if (d === r || routeKey(d) !== routeKey(r) || d.protocol !== r.protocol) return false;
  if (d.family === 6) {
    if (r.nhid !== undefined) return d.nhid === undefined || d.nhid === r.nhid;
    if (d.nhid !== undefined) return false;
    const paths = d.hops ?? [d];
    const theirs = r.hops ?? [r];
    return paths.some((p) =>
      theirs.some((q) => p.dev === q.dev && (p.gateway === undefined || p.gateway === q.gateway)),
    );
  }
  return (
    // A unicast delete names no type (iproute2 leaves rtm_type unset): any type matches.
    (d.type === "unicast" || d.type === r.type) &&
    d.dev === r.dev &&
    // A delete naming paths or a nexthop object selects by them.
    d.nhid === r.nhid &&
    hopsText(d.hops) === hopsText(r.hops) &&
    (d.gateway === undefined || d.gateway === r.gateway) &&
    d.scope === r.scope &&
    (d.prefsrc === undefined || d.prefsrc === r.prefsrc) &&
    (d.attrs ?? []).every(([n, v]) => r.attrs?.some(([m, w]) => m === n && w === v))
  );
}

/**
 * The routes a delete of the plan would hit instead of its own, walking
 * the plan in order: a route of its key still there (current, or put in by
 * a replace, which takes its victim's place; an append goes after them
 * all) that comes before it (`position`: the kernel's order of the current
 * routes) and that the delete's line matches. Their keys are rebuilt.
 */
export function deleteConflicts(
  ops: readonly RouteOp[],
  sameKey: (r: Route) => readonly Route[],
  position: (r: Route) => number,
): Route[] {
  const gone = new Set<Route>();
  const placed: { route: Route; at: number }[] = [];
  const out: Route[] = [];
  for (const o of ops) {
    if (o.op === "append") continue;
    if (o.op === "replace") {
      if (o.overwrites) {
        gone.add(o.overwrites);
        placed.push({ route: o.route, at: position(o.overwrites) });
      }
      continue;
    }
    const t = o.route;
    const at = position(t);
    // Hitting a twin the kernel cannot tell from it leaves the same table.
    const hits = (r: Route) => deleteMatches(t, r) && !kernelSame(t, r);
    for (const r of sameKey(t)) {
      if (!gone.has(r) && position(r) < at && hits(r)) out.push(r);
    }
    for (const p of placed) {
      if (p.at < at && routeKey(p.route) === routeKey(t) && hits(p.route)) out.push(p.route);
    }
    gone.add(t);
  }
  return out;
}
