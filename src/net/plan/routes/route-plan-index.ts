/**
 * One index of a plan's routes by destination (planOnce, plan-routes.ts):
 * the current routes with each `dst`, in the kernel's order, and how many
 * target routes have it. It answers three questions (the routes in place
 * by identity, the current routes by key, the target's count per
 * destination) with one hash of each route's `dst`: over a large table
 * the hashes, not the comparisons, are what a plan's time goes to.
 */
import type { Route } from "../../model/model";
import { sameIdentity } from "./route-index";

interface Slot {
  /** The current routes with this destination, in `current` order. */
  current: Route | Route[] | undefined;
  /** How many target routes have it. */
  targets: number;
}

const NONE: readonly Route[] = [];

const sameKey = (a: Route, b: Route) =>
  a.family === b.family &&
  a.metric === b.metric &&
  (a.tos ?? 0) === (b.tos ?? 0) &&
  a.from === b.from;

export interface PlanIndexOptions {
  /** Every current route of the table, in the kernel's order. */
  current: readonly Route[];
  /** Whether a current route counts as in place when a target route has its identity. */
  kept: (r: Route) => boolean;
  target: readonly Route[];
  /** Identities compare protocol too (exact mode). */
  withProtocol: boolean;
}

/**
 * By destination: a Slot where a current route has it, else the number of
 * target routes with it (no object for each of 10,000 routes to add).
 */
export class PlanIndex {
  private readonly byDst = new Map<string, Slot | number>();
  private readonly kept: (r: Route) => boolean;
  private readonly withProtocol: boolean;
  /** Whether there is a current route at all (a table being made has none: nothing to look up). */
  private readonly hasCurrent: boolean;
  /** Whether two target routes have one destination (else no two share a key). */
  readonly shared: boolean = false;

  constructor(o: PlanIndexOptions) {
    this.kept = o.kept;
    this.withProtocol = o.withProtocol;
    this.hasCurrent = o.current.length > 0;
    for (const r of o.current) {
      const slot = this.byDst.get(r.dst) as Slot | undefined;
      if (slot === undefined) this.byDst.set(r.dst, { current: r, targets: 0 });
      else if (slot.current === undefined) slot.current = r;
      else if (Array.isArray(slot.current)) slot.current.push(r);
      else slot.current = [slot.current, r];
    }
    for (const r of o.target) {
      const slot = this.byDst.get(r.dst);
      if (slot === undefined) this.byDst.set(r.dst, 1);
      else if (typeof slot === "number") {
        this.byDst.set(r.dst, slot + 1);
        this.shared = true;
      } else if (++slot.targets > 1) this.shared = true;
    }
  }

  private currentWith(dst: string): Route | Route[] | undefined {
    if (!this.hasCurrent) return undefined;
    const slot = this.byDst.get(dst);
    return slot === undefined || typeof slot === "number" ? undefined : slot.current;
  }

  /** How many target routes have destination `dst` (a ReadonlyMap's `get`, for keyGroups). */
  readonly counts = {
    get: (dst: string): number | undefined => {
      const slot = this.byDst.get(dst);
      return typeof slot === "object" ? slot.targets : slot;
    },
  };

  /** Whether `r` is the one target route with its destination and no current route has its key. */
  alone(r: Route): boolean {
    const slot = this.byDst.get(r.dst);
    if (typeof slot !== "object") return slot === 1;
    if (slot.targets !== 1) return false;
    const c = slot.current;
    if (c === undefined) return true;
    if (!Array.isArray(c)) return !sameKey(c, r);
    return !c.some((x) => sameKey(x, r));
  }

  /** The current routes with the kernel key of `r` (family, dst, metric, tos, from), in order. */
  sameKey(r: Route): readonly Route[] {
    const c = this.currentWith(r.dst);
    if (c === undefined) return NONE;
    if (!Array.isArray(c)) return sameKey(c, r) ? [c] : NONE;
    return c.filter((x) => sameKey(x, r));
  }

  /** Adds to `into` every kept current route with the identity of `r`; whether there was one. */
  addMatches(r: Route, into: Set<Route>): boolean {
    const c = this.currentWith(r.dst);
    if (c === undefined) return false;
    if (!Array.isArray(c)) {
      if (!this.kept(c) || !sameIdentity(c, r, this.withProtocol)) return false;
      into.add(c);
      return true;
    }
    let found = false;
    for (const t of c) {
      if (this.kept(t) && sameIdentity(t, r, this.withProtocol)) {
        into.add(t);
        found = true;
      }
    }
    return found;
  }

  /** The kept current routes with the identity of `r`, in order. */
  matches(r: Route): Route[] {
    const c = this.currentWith(r.dst);
    if (c === undefined) return [];
    const list = Array.isArray(c) ? c : [c];
    return list.filter((t) => this.kept(t) && sameIdentity(t, r, this.withProtocol));
  }
}
