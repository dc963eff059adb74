/**
 * Routes of an Apply request that share a key (table, family, destination,
 * metric, tos, from): what `ip route append` makes, kept in order; an exact
 * duplicate is dropped; IPv6 joins two with a gateway into one multipath
 * route (and refuses two on one link without one), so those are refused,
 * naming the field and the value. routesFromWire (validate-state-routes.ts)
 * asks, for each route, about the routes of its destination kept before it.
 */
import type { Route } from "../../net/model/model";
import { ecmpCapable } from "../../net/plan/routes/route-missing";
import { invalid } from "./validate-fields";

/**
 * Whether IPv6 takes two routes of one key as the same (rt6_duplicate_nexthop:
 * the same nexthop object, or the same link and gateway; a route through
 * no link is on lo). Their types are not compared.
 */
function sameIpv6Path(a: Route, b: Route): boolean {
  if (a.nhid !== undefined || b.nhid !== undefined) return a.nhid === b.nhid;
  return a.dev === b.dev && a.gateway === b.gateway;
}

/** Whether two routes of one destination have one key (table, family, metric, tos, from). */
export function sameKey(a: Route, b: Route): boolean {
  return (
    a.table === b.table &&
    a.family === b.family &&
    a.metric === b.metric &&
    (a.tos ?? 0) === (b.tos ?? 0) &&
    (a.from ?? "") === (b.from ?? "")
  );
}

/**
 * Whether `m` is an exact duplicate of one of its `twins` (kept routes of
 * its key, in order): then it is dropped. Throws for the twins IPv6 joins
 * or refuses.
 */
export function twinOf(
  m: Route,
  twins: readonly number[],
  routes: readonly Route[],
  indexOf: (t: number) => number,
  dest: () => string,
  f: () => string,
): boolean {
  const text = JSON.stringify(m);
  for (const t of twins) {
    const other = routes[t] as Route;
    if (JSON.stringify(other) === text) return true;
    if (m.family !== 6) continue;
    const joins = ecmpCapable(m) && ecmpCapable(other);
    const sameLink = !ecmpCapable(m) && !ecmpCapable(other) && sameIpv6Path(m, other);
    if (joins)
      throw invalid(
        `${f()}.dest`,
        dest(),
        `has the key of desired.routes[${indexOf(t)}] (table, destination, metric, from) and a gateway too: IPv6 makes them one multipath route; give it once with hops`,
      );
    if (sameLink)
      throw invalid(
        `${f()}.dest`,
        dest(),
        `clashes with desired.routes[${indexOf(t)}]: same table, destination, metric and device`,
      );
  }
  return false;
}
