/**
 * Routes by destination, to ask whether a route with the identity of
 * another is among them without building identity strings: over 10,000
 * routes, building, flattening and hashing those strings (routeIdentity)
 * was most of a plan's time, while each route's `dst` text is already at
 * hand and few routes share one.
 */
import type { Route } from "./model";

/**
 * Whether `routeIdentity(a, withProtocol) === routeIdentity(b, withProtocol)`
 * (model.ts), field by field: an absent gateway or source equals "", as there.
 */
export function sameIdentity(a: Route, b: Route, withProtocol: boolean): boolean {
  return (
    a.dst === b.dst &&
    a.dev === b.dev &&
    (a.gateway ?? "") === (b.gateway ?? "") &&
    a.family === b.family &&
    a.type === b.type &&
    (a.prefsrc ?? "") === (b.prefsrc ?? "") &&
    a.scope === b.scope &&
    a.metric === b.metric &&
    a.onlink === b.onlink &&
    a.mtu === b.mtu &&
    (!withProtocol || a.protocol === b.protocol)
  );
}

/** A set of routes answering "is a route with this identity in it?". */
export class IdentityIndex {
  private readonly byDst = new Map<string, Route | Route[]>();

  constructor(
    routes: Iterable<Route>,
    private readonly withProtocol: boolean,
  ) {
    for (const r of routes) {
      const there = this.byDst.get(r.dst);
      if (there === undefined) this.byDst.set(r.dst, r);
      else if (Array.isArray(there)) there.push(r);
      else this.byDst.set(r.dst, [there, r]);
    }
  }

  /** Adds to `into` every route of the set with the identity of `r`; whether there was one. */
  addMatches(r: Route, into: Set<Route>): boolean {
    const there = this.byDst.get(r.dst);
    if (there === undefined) return false;
    if (!Array.isArray(there)) {
      if (!sameIdentity(there, r, this.withProtocol)) return false;
      into.add(there);
      return true;
    }
    let found = false;
    for (const t of there) {
      if (sameIdentity(t, r, this.withProtocol)) {
        into.add(t);
        found = true;
      }
    }
    return found;
  }

  /** Whether a route with the identity of `r` is in the set. */
  has(r: Route): boolean {
    const there = this.byDst.get(r.dst);
    if (there === undefined) return false;
    if (!Array.isArray(there)) return sameIdentity(there, r, this.withProtocol);
    for (const t of there) if (sameIdentity(t, r, this.withProtocol)) return true;
    return false;
  }
}

type KeyOf = Pick<Route, "family" | "dst" | "metric">;

/**
 * Values by a route's kernel key (family, dst, metric: what routeKey
 * spells), found through the route's `dst` without building the key text.
 */
export class KeyMap<V> {
  private readonly byDst = new Map<string, { family: number; metric: number; value: V }[]>();

  get(r: KeyOf): V | undefined {
    const list = this.byDst.get(r.dst);
    if (list === undefined) return undefined;
    for (const e of list) if (e.family === r.family && e.metric === r.metric) return e.value;
    return undefined;
  }

  set(r: KeyOf, value: V): void {
    const list = this.byDst.get(r.dst);
    if (list === undefined) {
      this.byDst.set(r.dst, [{ family: r.family, metric: r.metric, value }]);
      return;
    }
    for (const e of list) {
      if (e.family === r.family && e.metric === r.metric) {
        e.value = value;
        return;
      }
    }
    list.push({ family: r.family, metric: r.metric, value });
  }
}
