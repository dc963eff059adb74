/**
 * A model of the kernel's main routing table, as `ip route replace/del`
 * through `ip -batch` sees it, for property tests of the route planner.
 *
 * Checked against Linux 6.18 with iproute2 6.1 in a throwaway netns:
 * - the table is a list; several routes may share a key (family, dst,
 *   metric) when they are on different links: the kernel makes one prefix
 *   route per link even for the same subnet (10.0.0.0/24 on eth0 and eth1,
 *   fe80::/64 on every link);
 * - `replace` overwrites the FIRST route with its key, whatever its link
 *   (IPv4 fib_table_insert's fa_first; IPv6 fib6_add_rt2node prefers a route
 *   whose having-a-gateway matches, else the first), and adds when there is
 *   none. IPv4 does nothing when an identical route is already there;
 * - `append` adds beside the routes with the same key;
 * - `del` removes the first route matching what the rendered line selects
 *   (key, and type, scope, src, proto, dev, gateway when given; metric 0
 *   matches any) and fails with "No such process" when none does. Strict:
 *   it must be the exact route the operation names;
 * - IPv6 routes keep scope universe whatever is asked;
 * - a gateway route needs `onlink` or a gateway-less unicast route on the
 *   same link whose destination contains the gateway (IPv4: scope link
 *   only, as fib_check_nh_v4_gw looks up with scope > universe). The check
 *   runs before a replace takes effect, so the route being overwritten still
 *   counts (the PTP subnet route reaches its gateway through the kernel's).
 *   Strict: IPv6 link-local gateways need their fe80::/64 like any other.
 *   A multipath route needs every path reachable; a route by a nexthop
 *   object is the nexthop model's concern (plan-nexthops tests);
 * - the key includes IPv4's tos and IPv6's source prefix (`from`);
 * - IPv6 keeps each path of a multipath route as a route of its own (a
 *   sibling) and shows them as one: `append` of a route with a gateway
 *   next to one of its key with a gateway (and no nexthop object) joins
 *   it as another path; `replace` overwrites all paths of the route it
 *   hits; a `del` naming one gateway and link takes that path only;
 *   `append` refuses a route of the key with the same link and gateway,
 *   or the same nexthop object, whatever its type (rt6_duplicate_nexthop).
 */
import { cidrContains } from "../../src/net/model/address";
import { type Route, routeIdentity, routeKey } from "../../src/net/model/model";
import { renderRouteDelete } from "../../src/net/plan/render-batch";
import type { RouteOp } from "../../src/net/plan/routes/plan-routes";
import { ecmpCapable } from "../../src/net/plan/routes/route-missing";
import { SCOPE_LINK } from "../../src/net/vocabulary/routes";
import {
  type DeleteSelector,
  parseDelete,
  parseRouteLine,
  paths,
  SimError,
  sameHopList,
} from "./route-sim-lines";

export { SimError };

/** A route as the kernel keeps it: IPv6 routes have no scope (always universe). */
const stored = (r: Route): Route => (r.family === 6 && r.scope !== 0 ? { ...r, scope: 0 } : r);

const INVALID_GATEWAY = "Error: Nexthop has invalid gateway.";
const FILE_EXISTS = "RTNETLINK answers: File exists";
const NO_SUCH_PROCESS = "RTNETLINK answers: No such process";

const id = (r: Route) => routeIdentity(r, true);

const containsMemo = new Map<string, boolean>();
/** cidrContains, memoised: property tests ask the same few pairs many times. */
export function contains(cidr: string, ip: string): boolean {
  const k = `${cidr} ${ip}`;
  let v = containsMemo.get(k);
  if (v === undefined) {
    v = cidrContains(cidr, ip);
    containsMemo.set(k, v);
  }
  return v;
}

/**
 * A route as the kernel keeps it. An IPv6 multipath route is one entry per
 * path (`sib` names the group, `weight` the path's), as fib6 keeps
 * siblings; IPv4 keeps a multipath route as one entry with its `hops`.
 */
type Entry = Route & { sib?: number; weight?: number };

/** The entries of a route as the kernel makes them. */
function entriesOf(r: Route, sib: () => number): Entry[] {
  if (r.family === 4 || !r.hops) return [{ ...r }];
  const group = sib();
  const { hops, ...rest } = r;
  return hops.map((h) => ({
    ...rest,
    ...(h.gateway ? { gateway: h.gateway } : {}),
    dev: h.dev,
    onlink: h.onlink,
    weight: h.weight,
    sib: group,
  }));
}

/** An entry without the kernel's bookkeeping: a route as a lone path shows. */
function plain(e: Entry): Route {
  const { sib: _s, weight: _w, ...r } = e;
  return r;
}

const samePath = (e: Route, p: { gateway?: string; dev: string }) =>
  e.dev === p.dev && e.gateway === p.gateway;

export class RouteSim {
  private readonly entries: Entry[];
  private nextSib = 1;
  /** Every operation applied, with what it did, for failure messages. */
  readonly log: string[] = [];

  constructor(routes: readonly Route[] = []) {
    this.entries = routes.flatMap((r) => entriesOf(stored(r), () => this.nextSib++));
  }

  /** The table as `ip route` shows it: IPv6 siblings as one multipath route. */
  get routes(): Route[] {
    const out: Route[] = [];
    const seen = new Set<number>();
    for (const e of this.entries) {
      if (e.sib === undefined) {
        out.push(plain(e));
        continue;
      }
      if (seen.has(e.sib)) continue;
      seen.add(e.sib);
      const group = this.entries.filter((x) => x.sib === e.sib);
      if (group.length === 1) {
        out.push(plain(e));
        continue;
      }
      const { gateway: _g, ...first } = plain(e);
      out.push({
        ...first,
        dev: "",
        onlink: false,
        hops: group.map((x) => ({
          ...(x.gateway ? { gateway: x.gateway } : {}),
          dev: x.dev,
          weight: x.weight ?? 1,
          onlink: x.onlink,
        })),
      });
    }
    return out;
  }

  /** Whether a gateway-less route of the table makes each of r's gateways reachable. */
  private reaches(r: Route): boolean {
    if (r.hops) return r.hops.every((h) => this.reaches({ ...r, ...h, hops: undefined }));
    const gw = r.gateway;
    if (gw === undefined || r.onlink) return true;
    // A gateway of the other family (IPv4 via inet6) is found in that family's routes.
    const family = gw.includes(":") ? 6 : 4;
    return this.entries.some(
      (c) =>
        c.family === family &&
        c.type === "unicast" &&
        c.gateway === undefined &&
        c.hops === undefined &&
        c.nhid === undefined &&
        c.dev === r.dev &&
        (family === 6 || c.scope === SCOPE_LINK) &&
        contains(c.dst, gw),
    );
  }

  private firstWithKey(r: Route): number {
    const key = routeKey(r);
    if (r.family === 6) {
      const same = this.entries.findIndex(
        (c) => routeKey(c) === key && ecmpCapable(c) === ecmpCapable(r),
      );
      if (same >= 0) return same;
    }
    return this.entries.findIndex((c) => routeKey(c) === key);
  }

  /**
   * Removes the entry at `at` and, when it is a path of an IPv6 multipath
   * route, every other path; answers where each was.
   */
  private removeWithSiblings(at: number): { at: number }[] {
    const e = this.entries[at] as Entry;
    const gone = e.sib === undefined ? [e] : this.entries.filter((x) => x.sib === e.sib);
    const where = gone.map((g) => ({ at: this.entries.indexOf(g) }));
    for (const g of gone) this.entries.splice(this.entries.indexOf(g), 1);
    return where;
  }

  replace(route: Route): void {
    const r = stored(route);
    if (r.family === 4 && this.entries.some((c) => id(c) === id(r))) {
      this.log.push(`replace ${id(r)}: identical route present, nothing to do`);
      return;
    }
    const at = this.firstWithKey(r);
    if (!this.reaches(r)) {
      throw new SimError(`replace ${id(r)}: Nexthop has invalid gateway`, INVALID_GATEWAY);
    }
    const made = entriesOf(r, () => this.nextSib++);
    if (at >= 0) {
      this.log.push(`replace ${id(r)}: overwrote ${id(this.entries[at] as Route)}`);
      // IPv6 replaces every path of the route it overwrites (fib6_add_rt2node).
      const gone = this.removeWithSiblings(at);
      const pos = Math.min(at, ...gone.map((g) => g.at));
      this.entries.splice(pos, 0, ...made);
    } else {
      this.log.push(`replace ${id(r)}: added`);
      this.entries.push(...made);
    }
  }

  /**
   * `append`: adds a route beside those with its key. IPv4 refuses an
   * identical one, IPv6 one with the same link and gateway ("File exists");
   * IPv6 joins a route with a gateway to one of its key with a gateway, as
   * more paths of it.
   */
  append(route: Route): void {
    const r = stored(route);
    const dup = this.entries.some((c) =>
      r.family === 4
        ? id(c) === id(r)
        : routeKey(c) === routeKey(r) &&
          (c.nhid !== undefined || r.nhid !== undefined
            ? c.nhid === r.nhid
            : paths(r).some((p) => samePath(c, p))),
    );
    if (dup) throw new SimError(`append ${id(r)}: File exists`, FILE_EXISTS);
    if (!this.reaches(r)) {
      throw new SimError(`append ${id(r)}: Nexthop has invalid gateway`, INVALID_GATEWAY);
    }
    const made = entriesOf(r, () => this.nextSib++);
    const at =
      r.family === 6 && ecmpCapable(r)
        ? this.entries.findIndex((c) => routeKey(c) === routeKey(r) && ecmpCapable(c))
        : -1;
    if (at >= 0) {
      // A sibling of that route, but last in the list of the key's routes
      // (fib6_add_rt2node appends after every route of the same metric):
      // a delete meets the routes before it first.
      const s = this.entries[at] as Entry;
      s.sib ??= this.nextSib++;
      for (const m of made) m.sib = s.sib;
      this.log.push(`append ${id(r)}: joined ${id(s)} as more paths`);
      this.entries.push(...made);
      return;
    }
    this.log.push(`append ${id(r)}: added`);
    this.entries.push(...made);
  }

  /**
   * `del`, as the kernel selects from what the rendered line gives
   * (fib_table_delete, ip6_route_del): key, then type, scope, source (IPv4)
   * and protocol when given, device and gateway when given, metric when
   * not 0; the first match in metric order goes. IPv6 deletes each path
   * named; without a gateway, every path of the route hit. Strict: what
   * goes must be exactly the route named.
   */
  delete(r: Route): void {
    const gone = this.select(parseDelete(renderRouteDelete(r)));
    if (gone === undefined) throw new SimError(`delete ${id(r)}: No such process`, NO_SUCH_PROCESS);
    const removed = r.family === 6 && r.hops ? gone : gone.slice(0, 1);
    const want = r.family === 6 && r.hops ? entriesOf(r, () => 0) : [r];
    const got = removed.map((e) => id(plain(e)));
    if (got.join("|") !== want.map((e) => id(plain(e))).join("|")) {
      throw new SimError(`delete ${id(r)}: removed another route, ${got.join(", ")}`);
    }
    this.log.push(`delete ${id(r)}`);
    for (const e of removed) this.entries.splice(this.entries.indexOf(e), 1);
  }

  /**
   * The entries `route del` with this selector removes (IPv6: one per path
   * named, or every path of the route hit when no gateway is named), or
   * undefined when it fails.
   */
  private select(sel: DeleteSelector): Entry[] | undefined {
    const family = sel.dst.includes(":") ? 6 : 4;
    if (family === 6 && sel.hops) {
      const out: Entry[] = [];
      for (const h of sel.hops) {
        const e = this.first(sel, family, h);
        if (e === undefined) return undefined;
        out.push(e);
      }
      return out;
    }
    const e = this.first(sel, family, sel);
    if (e === undefined) return undefined;
    if (family === 6 && e.sib !== undefined && sel.gateway === undefined) {
      return this.entries.filter((x) => x.sib === e.sib);
    }
    return [e];
  }

  private first(
    sel: DeleteSelector,
    family: number,
    path: { gateway?: string; dev?: string },
  ): Entry | undefined {
    return this.entries
      .filter((c) => c.family === family && c.dst === sel.dst)
      .sort((a, b) => a.metric - b.metric)
      .find((c) => {
        if (sel.metric !== 0 && c.metric !== sel.metric) return false;
        if ((c.tos ?? 0) !== (sel.tos ?? 0) || c.from !== sel.from) return false;
        if (sel.protocol !== undefined && c.protocol !== sel.protocol) return false;
        if (family === 6) {
          // ip6_route_del: a route by a nexthop object goes whatever the line says of
          // links, unless it names another object; no type, scope, source or metrics.
          if (c.nhid !== undefined) return sel.nhid === undefined || sel.nhid === c.nhid;
          if (sel.nhid !== undefined) return false;
          const dev = c.dev === "" ? "lo" : c.dev;
          return (
            (path.dev === undefined || dev === path.dev) &&
            (path.gateway === undefined || c.gateway === path.gateway)
          );
        }
        return (
          (sel.type === undefined || c.type === sel.type) &&
          (sel.scope === undefined || c.scope === sel.scope) &&
          (sel.prefsrc === undefined || c.prefsrc === sel.prefsrc) &&
          (sel.nhid === undefined || c.nhid === sel.nhid) &&
          (!sel.hops || sameHopList(c.hops, sel.hops)) &&
          (sel.hops || !c.hops || sel.dev === undefined) &&
          (path.dev === undefined || c.dev === path.dev || (c.hops !== undefined && !!sel.hops)) &&
          (path.gateway === undefined || c.gateway === path.gateway) &&
          // fib_metrics_match, fib_nh_match's flow: what the line gives must be the route's.
          (sel.attrs ?? []).every(([n, v]) => c.attrs?.some(([m, w]) => m === n && w === v))
        );
      });
  }

  /**
   * Runs one `ip -batch` line as iproute2 and the kernel would: `route
   * replace|append|del ...` as rendered by render-batch.ts. Throws SimError
   * with the kernel's words on failure.
   */
  applyLine(line: string): void {
    const t = line.split(" ");
    if (t[0] !== "route") throw new SimError(`not a route line: ${line}`);
    if (t[1] === "del") {
      const gone = this.select(parseDelete(line));
      if (gone === undefined) throw new SimError(`${line}: No such process`, NO_SUCH_PROCESS);
      this.log.push(`${line}: removed ${gone.map((e) => id(plain(e))).join(", ")}`);
      for (const e of gone) this.entries.splice(this.entries.indexOf(e), 1);
      return;
    }
    const r = parseRouteLine(line);
    if (t[1] === "replace") this.replace(r);
    else if (t[1] === "append") this.append(r);
    else throw new SimError(`unknown verb in ${line}`);
  }

  apply(op: RouteOp): void {
    if (op.op === "replace") this.replace(op.route);
    else if (op.op === "append") this.append(op.route);
    else this.delete(op.route);
  }

  /** Applies every operation in order; the first failure throws (no rollback here). */
  applyAll(ops: readonly RouteOp[]): this {
    for (const op of ops) this.apply(op);
    return this;
  }
}
