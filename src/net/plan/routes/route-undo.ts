/**
 * What a route plan touches, and the table that undoes it: the change
 * record of an UpdateRoutes holds only the routes its plan removes (their
 * old values) and the routes it puts in, so the record scales with the
 * change, not with the table. Pure.
 *
 * Why that is enough: a plan's operations only ever remove the routes it
 * names (a delete's route, the route a replace overwrites) and put in its
 * own routes; every other route of the table is as it was before. So from
 * the table at any point of the batch (read after the agent died), the old
 * table is what is there minus the plan's routes, plus the old values of
 * the routes it removed. A plan's route never matches an untouched old one:
 * a desired route with the identity of a route already there is in place
 * and costs no operation (plan-routes.ts).
 */
import type { Route } from "../../model/model";
import { isManaged, type RouteOp } from "./plan-routes";
import { IdentityIndex } from "./route-index";

/** The routes a plan touches: the old ones it removes, the ones it puts in. */
export interface TouchedRoutes {
  removed: Route[];
  added: Route[];
}

/** What `ops` touch (the record of an UpdateRoutes). */
export function touchedRoutes(ops: readonly RouteOp[]): TouchedRoutes {
  const removed: Route[] = [];
  const added: Route[] = [];
  for (const op of ops) {
    if (op.op === "delete") {
      removed.push(op.route);
      continue;
    }
    if (op.op === "replace" && op.overwrites) removed.push(op.overwrites);
    added.push(op.route);
  }
  return { removed, added };
}

/**
 * The managed table from before the plan, from `now` (the table read at
 * any point of the plan's batch) and what the plan touched: the routes of
 * `now` that are not the plan's (compared as the plan compares: without
 * the protocol), and the old values of those it removed.
 */
export function tableBeforeTouch(now: readonly Route[], touched: TouchedRoutes): Route[] {
  const plans = new IdentityIndex(touched.added, false);
  const kept = now.filter((r) => isManaged(r, true) && !plans.has(r));
  const there = new IdentityIndex(kept, true);
  const back = touched.removed.filter((r) => isManaged(r, true) && !there.has(r));
  return [...kept, ...back];
}
