/**
 * Routes that share a key (what `ip route append` makes). IPv4 keeps them
 * in one list and a lookup takes the first that works, so their order is
 * part of the table: planRoutes adds a group's missing routes together, in
 * the desired order, and when the routes that stay are out of that order,
 * or a missing one must come before one that stays, the group's current
 * routes are deleted first and all of it added again (a moment without a
 * route for that key: only then). Pure.
 */
import { type Route, routeKey } from "../../model/model";
import { KeyMap } from "./route-index";

/** Target routes (indices) that share a key, in the order they are to be added. */
export interface KeyGroup {
  members: number[];
  /** IPv4 of one kind: the desired order is the kernel's order to reach (checked, rebuilt when it differs). */
  ordered: boolean;
  /** Of one kind (all with a gateway or all without): added together, in one bucket. */
  together: boolean;
}

/**
 * The groups of two or more target routes of one key not made by the
 * kernel (what `ip route append` makes; the kernel's prefix routes of one
 * subnet on two links, and a route beside them, are planned route by
 * route as before), by each member's index. IPv4 in the desired order;
 * IPv6, which looks its routes up by score, not order, those without a
 * gateway first. Of routes with and without a gateway in one key, only
 * those without one go first: their order among the others is not kept.
 */
export function keyGroups(
  target: readonly Route[],
  hasGateway: (r: Route) => boolean,
  dstCount: Pick<ReadonlyMap<string, number>, "get"> = countDsts(target),
): Map<number, KeyGroup> {
  // Routes of one key share a destination: only those whose destination
  // another target route has are keyed (most have it alone).
  const byKey = new KeyMap<number[]>();
  let shared = false;
  target.forEach((r, i) => {
    if (r.protocol === "kernel" || (dstCount.get(r.dst) ?? 0) < 2) return;
    const list = byKey.get(r);
    if (list) {
      list.push(i);
      shared = true;
    } else byKey.set(r, [i]);
  });
  const out = new Map<number, KeyGroup>();
  if (!shared) return out;
  target.forEach((r, i) => {
    if (r.protocol === "kernel" || out.has(i) || (dstCount.get(r.dst) ?? 0) < 2) return;
    const own = byKey.get(r) as number[];
    if (own.length < 2) return;
    // The kernel's routes of the key go with it, where they are in the target.
    const list = target.flatMap((t, k) =>
      routeKey(t) === routeKey(r) && t.family === r.family ? [k] : [],
    );
    // Routes with and without a gateway go in apart (link routes first, so
    // gateways are reachable): the kernel's order is kept only for a group of
    // one kind, which goes in together.
    const gw = list.filter((k) => hasGateway(target[k] as Route));
    const mixed = gw.length > 0 && gw.length < list.length;
    const members =
      r.family === 4 && !mixed ? list : [...list.filter((k) => !gw.includes(k)), ...gw];
    const group = { members, ordered: r.family === 4 && !mixed, together: !mixed };
    for (const k of list) out.set(k, group);
  });
  return out;
}

/** How many of `routes` have each destination. */
function countDsts(routes: readonly Route[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of routes) m.set(r.dst, (m.get(r.dst) ?? 0) + 1);
  return m;
}

/**
 * Whether a group must be rebuilt: the current positions (in `current`,
 * the kernel's order) of the members in place must rise in group order,
 * and no missing member may come before one in place (additions go last).
 */
export function needsRebuild(
  group: readonly number[],
  position: (targetIndex: number) => number | undefined,
): boolean {
  let last = -1;
  let missingSeen = false;
  for (const i of group) {
    const at = position(i);
    if (at === undefined) {
      missingSeen = true;
      continue;
    }
    if (missingSeen || at < last) return true;
    last = at;
  }
  return false;
}
