/**
 * The route part of an Apply: nexthop objects and the routes of every
 * table, planned against what the link lines leave (plan-link-phase.ts for
 * single-link routes, plan-nexthops.ts for objects and multipath routes).
 * Lines in order: route changes of every table up to the first route by
 * a nexthop object, objects made or changed (singles, then groups), the
 * other route changes, route deletes, stale objects deleted (groups
 * first). Pure.
 */
import type { DesiredState, FullState } from "../model/full-state";
import type { Link, Route } from "../model/model";
import { impliedKernelRoutes } from "./kernel-routes";
import type { LinkPhase } from "./plan-link-phase";
import { afterLinkChanges, type NexthopPlan, planNexthops, withoutNexthops } from "./plan-nexthops";
import { type BatchParts, parallelRouteOps } from "./plan-parallel";
import { planTables } from "./plan-tables";
import {
  nexthopNeeds6,
  renderNexthopDelete,
  renderNexthopReplace,
  renderRouteOps,
} from "./render-batch";
import type { RouteOp } from "./routes/plan-routes";

export interface RouteStatePlan {
  nexthops: NexthopPlan;
  routeOps: RouteOp[];
  /** For the main `ip -batch`, after the link lines. */
  lines: string[];
  /**
   * For an `ip -6 -batch` before it: IPv6 blackhole objects, which only
   * `-6` can make (nexthopNeeds6); on lo, which no link line touches.
   */
  lines6: string[];
  /**
   * `lines` in parts whose middle may run table by table at once
   * (plan-parallel.ts), when the plan is large and of that shape.
   */
  parts?: BatchParts;
}

/** A link's name after the link lines, by its name before (unchanged when it is not renamed). */
function renamer(before: readonly Link[], phase: LinkPhase): (dev: string) => string {
  const after = new Map(phase.predicted.map((l) => [l.index, l.name]));
  const byName = new Map(before.map((l) => [l.name, l.index]));
  return (dev) => {
    const index = byName.get(dev);
    return index === undefined ? dev : (after.get(index) ?? dev);
  };
}

/** The lines of nexthop operations, in order. */
export function renderNexthopOps(ops: NexthopPlan["heads"]): string[] {
  return ops.map((o) =>
    o.op === "delete" ? renderNexthopDelete(o.nexthop) : renderNexthopReplace(o.nexthop),
  );
}

/**
 * `routes` are the routes as the link lines leave them by planLinkPhase's
 * own prediction (single-link routes); this adds what the lines do to
 * nexthop objects and multipath routes.
 */
export function planRouteState(
  current: Pick<FullState, "links" | "nexthops">,
  routes: readonly Route[],
  desired: Pick<DesiredState, "routes" | "nexthops">,
  phase: LinkPhase,
  options: { exact: boolean },
): RouteStatePlan {
  const after = afterLinkChanges(current.nexthops ?? [], routes, {
    downed: phase.downed,
    renamed: renamer(current.links, phase),
  });
  const nexthops = planNexthops(after.nexthops, desired.nexthops);
  // Objects deleted to be made anew take their routes (and groups left empty) with them.
  const alive = new Set(withoutNexthops(after.nexthops, nexthops.recreated).map((n) => n.id));
  const left = nexthops.recreated.size
    ? after.routes.filter((r) => r.nhid === undefined || alive.has(r.nhid))
    : after.routes;
  const routeOps = planTables(left, desired.routes, {
    exact: options.exact,
    kernel: impliedKernelRoutes(phase.predicted),
  });
  const { main, six } = splitSix(nexthops.heads);
  const lines6 = renderNexthopOps(six);
  const parallel = parallelRouteOps(routeOps);
  if (parallel === undefined) {
    const lines = nexthopAndRouteLines(routeOps, main, nexthops.tails);
    return { nexthops, routeOps, lines, lines6 };
  }
  // Every table's routes without a gateway, then the objects (their
  // gateways reachable), then the gateway routes, then the deletes.
  const parts: BatchParts = {
    before: [...renderRouteOps(parallel.first), ...renderNexthopOps(main)],
    together: parallel.byTable.map(renderRouteOps),
    after: [...renderRouteOps(parallel.last), ...renderNexthopOps(nexthops.tails)],
  };
  const lines = [...parts.before, ...parts.together.flat(), ...parts.after];
  return { nexthops, routeOps, lines, lines6, parts };
}

/**
 * The lines of a route plan and its nexthop objects' operations. An
 * object's gateway must be reachable when it is made, maybe by a route of
 * the plan (a link route with no address's prefix behind it): objects go
 * in just before the first route that uses one (planRoutes puts routes
 * without a gateway first; a route by nhid counts as one with), stale
 * objects after everything.
 */
export function nexthopAndRouteLines(
  routeOps: readonly RouteOp[],
  heads: NexthopPlan["heads"],
  tails: NexthopPlan["tails"],
): string[] {
  const at = routeOps.findIndex((o) => o.op !== "delete" && o.route.nhid !== undefined);
  const cut = at < 0 ? routeOps.length : at;
  return [
    ...renderRouteOps(routeOps.slice(0, cut)),
    ...renderNexthopOps(heads),
    ...renderRouteOps(routeOps.slice(cut)),
    ...renderNexthopOps(tails),
  ];
}

/** The head operations an `ip -6 -batch` must run (made or made anew: IPv6 blackholes), and the rest. */
export function splitSix(heads: NexthopPlan["heads"]): {
  main: NexthopPlan["heads"];
  six: NexthopPlan["heads"];
} {
  const ids = new Set(
    heads.filter((o) => o.op === "replace" && nexthopNeeds6(o.nexthop)).map((o) => o.nexthop.id),
  );
  return {
    main: heads.filter((o) => !ids.has(o.nexthop.id)),
    six: heads.filter((o) => ids.has(o.nexthop.id)),
  };
}
