/**
 * Routes by destination, to ask whether a route with the identity of
 * another is among them without building identity strings: over a large
 * table, building, flattening and hashing those strings (routeIdentity)
 * would outweigh the plan's own work, while each route's `dst` text is
 * already at hand and few routes share one.
 */
import type { Hop, Route } from "../../model/model";
import { sameAttrs } from "../../vocabulary/attrs";
import { ROUTE_ATTRS } from "../../vocabulary/route-attrs";

function sameHops(a: readonly Hop[] | undefined, b: readonly Hop[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Hop;
    const y = b[i] as Hop;
    if (
      x.gateway !== y.gateway ||
      x.dev !== y.dev ||
      x.weight !== y.weight ||
      x.onlink !== y.onlink
    )
      return false;
  }
  return true;
}

/** The identity beyond the Kata-era fields: tos, from, nexthop object, paths, attributes. */
function sameExtra(a: Route, b: Route): boolean {
  return (
    (a.tos ?? 0) === (b.tos ?? 0) &&
    a.from === b.from &&
    a.nhid === b.nhid &&
    sameHops(a.hops, b.hops) &&
    sameAttrs(ROUTE_ATTRS, a.attrs, b.attrs)
  );
}

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
    (!withProtocol || a.protocol === b.protocol) &&
    sameExtra(a, b)
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

  /** The routes of the set with the identity of `r`, in set order. */
  matches(r: Route): Route[] {
    const there = this.byDst.get(r.dst);
    if (there === undefined) return [];
    const list = Array.isArray(there) ? there : [there];
    return list.filter((t) => sameIdentity(t, r, this.withProtocol));
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

type KeyOf = Pick<Route, "family" | "dst" | "metric" | "tos" | "from">;

interface KeyEntry<V> {
  family: number;
  metric: number;
  tos: number;
  from: string | undefined;
  value: V;
}

const sameKey = <V>(e: KeyEntry<V>, r: KeyOf) =>
  e.family === r.family && e.metric === r.metric && e.tos === (r.tos ?? 0) && e.from === r.from;

/**
 * Values by a route's kernel key (family, dst, metric, tos, from: what
 * routeKey spells), found through the route's `dst` without building the
 * key text.
 */
export class KeyMap<V> {
  private readonly byDst = new Map<string, KeyEntry<V>[]>();
  private count = 0;

  /** How many keys have a value. */
  get size(): number {
    return this.count;
  }

  get(r: KeyOf): V | undefined {
    const list = this.byDst.get(r.dst);
    if (list === undefined) return undefined;
    for (const e of list) if (sameKey(e, r)) return e.value;
    return undefined;
  }

  set(r: KeyOf, value: V): void {
    const entry = { family: r.family, metric: r.metric, tos: r.tos ?? 0, from: r.from, value };
    const list = this.byDst.get(r.dst);
    if (list === undefined) {
      this.byDst.set(r.dst, [entry]);
      this.count++;
      return;
    }
    for (const e of list) {
      if (sameKey(e, r)) {
        e.value = value;
        return;
      }
    }
    list.push(entry);
    this.count++;
  }
}
