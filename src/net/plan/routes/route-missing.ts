/**
 * The missing routes of one planRoutes pass (plan-routes.ts): each goes in
 * with `replace`, or with `append` where its key is held by a route that
 * stays or the route `replace` would overwrite must stay until the deletes
 * at the end; into one of four buckets (routes without a gateway, with
 * one, gateway routes that overwrite a route without one, and the routes
 * a gateway check stops at: {@link stopsGatewayChecks}), with the current
 * routes they account for. IPv6's leftover twins are deleted just before
 * their append.
 */
import { hasGateway, type Route } from "../../model/model";
import { KeyMap } from "./route-index";
import type { RouteOp } from "./route-op";
import type { PlanIndex } from "./route-plan-index";

/** What of a pass's scope (plan-routes.ts Scope) the missing routes use. */
interface Scope {
  exact: boolean;
  /** A rollback: every route not kept deleted first (`deletesFirst`). */
  restore: boolean;
  owned: (r: Route) => boolean;
}

/**
 * IPv4 types whose routes (link scope, through a link) a gateway check
 * stops at and refuses. The kernel checks an IPv4 gateway once, when its
 * route is added, by a lookup in the route's own table at link scope:
 * a unicast or local route found there reaches the gateway, an anycast,
 * multicast or broadcast one is "Nexthop has invalid gateway", and none at
 * all sends the lookup on through the rules (fib_check_nh_v4_gw). A pod
 * that added such a route after its gateway routes holds both.
 */
const GATEWAY_CHECK_STOPS = new Set(["anycast", "multicast", "broadcast"]);

/** Whether a route goes in after every gateway route (see GATEWAY_CHECK_STOPS). */
export function stopsGatewayChecks(r: Route): boolean {
  return r.family === 4 && GATEWAY_CHECK_STOPS.has(r.type) && !hasGateway(r);
}

/**
 * The operations that put missing routes in, in four buckets (routes
 * without a gateway, with one, gateway routes that overwrite a route
 * without one, routes a gateway check stops at), and the current routes
 * they account for.
 */
export class MissingRoutes {
  readonly withoutGateway: RouteOp[] = [];
  readonly withGateway: RouteOp[] = [];
  // A gateway route overwriting a route without one (the PTP subnet route)
  // may take away what makes other gateways reachable: those go last.
  readonly overwritingLinkRoutes: RouteOp[] = [];
  /** Routes a gateway check stops at ({@link stopsGatewayChecks}): after every gateway route. */
  readonly afterGateways: RouteOp[] = [];
  /** Current routes the plan already accounts for (overwritten or deleted early). */
  readonly overwritten = new Set<Route>();
  private heldSet: KeyMap<true> | undefined;

  constructor(
    private readonly scope: Scope,
    private readonly index: PlanIndex,
    /** Only ever asked of managed routes (callers check `owned` first). */
    private readonly staying: ReadonlySet<Route>,
  ) {}

  /** Keys held by a route that stays: a `replace` there would overwrite it. */
  held(): KeyMap<true> {
    if (this.heldSet) return this.heldSet;
    this.heldSet = new KeyMap();
    for (const r of this.staying) this.heldSet.set(r, true);
    return this.heldSet;
  }

  /**
   * Plans one missing route: replace, or append where the key is held or
   * the victim stays until the end. Pushes into its bucket (or `forced`,
   * for a group that goes in together) and answers the bucket.
   */
  one(route: Route, forced?: RouteOp[], append = false): RouteOp[] {
    const { index, overwritten } = this;
    const { restore } = this.scope;
    let ops = forced ?? (hasGateway(route) ? this.withGateway : this.withoutGateway);
    // A route alone with its destination, and with no current route of its
    // key, needs no account of held keys (no other route of the plan can share its key).
    if (!append && index.alone(route)) {
      ops.push({ op: "replace", route });
      return ops;
    }
    const sameKey = index.sameKey(route);
    let op: RouteOp;
    const isHeld = append || this.held().get(route) === true;
    // A restore deletes every route it does not keep first: nothing left to overwrite.
    const victim = isHeld || restore ? undefined : firstWithKey(sameKey, route);
    if (isHeld || (victim && this.keptUntilEnd(victim, route))) {
      this.held().set(route, true);
      for (const twin of this.leavingTwins(route, sameKey)) {
        overwritten.add(twin);
        ops.push({ op: "delete", route: twin, reason: "superseded" });
      }
      op = { op: "append", route };
    } else {
      this.held().set(route, true);
      op = { op: "replace", route };
      if (victim) {
        overwritten.add(victim);
        op = { ...op, overwrites: victim };
        if (!forced && hasGateway(route) && !hasGateway(victim)) ops = this.overwritingLinkRoutes;
      }
    }
    ops.push(op);
    return ops;
  }

  /**
   * `replace` overwrites the first route with its key, whatever its link. A
   * route of another link that goes (stale, or superseded on its own link)
   * stays until the deletes at the end: that link's gateways may be reached
   * through it meanwhile. So a route whose victim is on another link is
   * appended instead, and the victim deleted by name last.
   */
  private keptUntilEnd(victim: Route, by: Route): boolean {
    return !this.scope.exact && victim.dev !== by.dev;
  }

  /**
   * IPv6 refuses a second route with the same key, link and gateway
   * ("File exists") and `replace` cannot choose what it overwrites, so a
   * leftover twin goes just before the append (the only early delete). An
   * IPv6 delete compares no source and, without a gateway, no gateway:
   * every leaving route of that key and link goes with it, those with a
   * gateway first, so each delete hits what it names.
   */
  private leavingTwins(route: Route, sameKey: readonly Route[]): Route[] {
    if (route.family !== 6 || this.scope.restore) return [];
    const { owned } = this.scope;
    const paths = pathsOf(route);
    const leaving = sameKey.filter(
      (r) =>
        owned(r) &&
        pathsOf(r).some((p) => paths.some((q) => p.dev === q.dev)) &&
        !this.staying.has(r) &&
        !this.overwritten.has(r),
    );
    const twin = (r: Route) =>
      pathsOf(r).some((p) => paths.some((q) => p.dev === q.dev && p.gateway === q.gateway));
    if (!leaving.some(twin)) return [];
    return leaving.sort((a, b) => Number(!hasGateway(a)) - Number(!hasGateway(b)));
  }
}

/**
 * The route `replace` of `route` overwrites, among the current routes with
 * its key: the first (IPv6 prefers one that, like it, can or cannot be a
 * multipath sibling: fib6_add_rt2node).
 */
function firstWithKey(same: readonly Route[], route: Route): Route | undefined {
  if (route.family === 6) {
    const like = same.find((r) => ecmpCapable(r) === ecmpCapable(route));
    if (like) return like;
  }
  return same[0];
}

/**
 * Whether IPv6 joins the route with others of its key into one multipath
 * route (rt6_qualify_for_ecmp): it has a gateway and no nexthop object.
 */
export function ecmpCapable(r: Route): boolean {
  return r.nhid === undefined && (r.gateway !== undefined || r.hops !== undefined);
}

/** A route's (gateway, link) pairs: its paths, or itself. */
function pathsOf(r: Route): readonly { gateway?: string; dev: string }[] {
  return r.hops ?? [r];
}
