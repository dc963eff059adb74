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
 */
import { cidrContains } from "../../src/net/address";
import { type Route, routeIdentity, routeKey } from "../../src/net/model";
import type { RouteOp } from "../../src/net/plan-routes";
import { renderRouteDelete } from "../../src/net/render-batch";
import { SCOPE_LINK } from "../../src/net/vocabulary/routes";

export class SimError extends Error {
  override readonly name = "SimError";

  /** What iproute2 would print on stderr for it. */
  constructor(
    message: string,
    readonly stderr = "",
  ) {
    super(message);
  }
}

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

export class RouteSim {
  readonly routes: Route[];
  /** Every operation applied, with what it did, for failure messages. */
  readonly log: string[] = [];

  constructor(routes: readonly Route[] = []) {
    this.routes = routes.map((r) => ({ ...r }));
  }

  /** Whether a gateway-less route of the table makes `r.gateway` reachable. */
  private reaches(r: Route): boolean {
    const gw = r.gateway;
    if (gw === undefined || r.onlink) return true;
    return this.routes.some(
      (c) =>
        c.family === r.family &&
        c.type === "unicast" &&
        c.gateway === undefined &&
        c.dev === r.dev &&
        (r.family === 6 || c.scope === SCOPE_LINK) &&
        contains(c.dst, gw),
    );
  }

  private firstWithKey(r: Route): number {
    const key = routeKey(r);
    if (r.family === 6) {
      const wantGw = r.gateway !== undefined;
      const same = this.routes.findIndex(
        (c) => routeKey(c) === key && (c.gateway !== undefined) === wantGw,
      );
      if (same >= 0) return same;
    }
    return this.routes.findIndex((c) => routeKey(c) === key);
  }

  replace(route: Route): void {
    const r = stored(route);
    if (r.family === 4 && this.routes.some((c) => id(c) === id(r))) {
      this.log.push(`replace ${id(r)}: identical route present, nothing to do`);
      return;
    }
    const at = this.firstWithKey(r);
    if (!this.reaches(r)) {
      throw new SimError(`replace ${id(r)}: Nexthop has invalid gateway`, INVALID_GATEWAY);
    }
    if (at >= 0) {
      this.log.push(`replace ${id(r)}: overwrote ${id(this.routes[at] as Route)}`);
      this.routes[at] = { ...r };
    } else {
      this.log.push(`replace ${id(r)}: added`);
      this.routes.push({ ...r });
    }
  }

  /**
   * `append`: adds a route beside those with its key. IPv4 refuses an
   * identical one, IPv6 one with the same link and gateway ("File exists").
   */
  append(route: Route): void {
    const r = stored(route);
    const dup = this.routes.some((c) =>
      r.family === 4
        ? id(c) === id(r)
        : routeKey(c) === routeKey(r) && c.dev === r.dev && c.gateway === r.gateway,
    );
    if (dup) throw new SimError(`append ${id(r)}: File exists`, FILE_EXISTS);
    if (!this.reaches(r)) {
      throw new SimError(`append ${id(r)}: Nexthop has invalid gateway`, INVALID_GATEWAY);
    }
    this.log.push(`append ${id(r)}: added`);
    this.routes.push({ ...r });
  }

  /**
   * `del`, as the kernel selects from what the rendered line gives
   * (fib_table_delete, ip6_route_del): key, then type, scope, source (IPv4)
   * and protocol when given, device and gateway when given, metric when
   * not 0; the first match in metric order goes.
   */
  delete(r: Route): void {
    const at = this.selectForDelete(parseDelete(renderRouteDelete(r)));
    if (at < 0) throw new SimError(`delete ${id(r)}: No such process`, NO_SUCH_PROCESS);
    const hit = this.routes[at] as Route;
    if (id(hit) !== id(r)) {
      throw new SimError(`delete ${id(r)}: removed another route, ${id(hit)}`);
    }
    this.log.push(`delete ${id(r)}`);
    this.routes.splice(at, 1);
  }

  /** The index `route del` with this selector removes, or -1. */
  private selectForDelete(sel: DeleteSelector): number {
    const family = sel.dst.includes(":") ? 6 : 4;
    const hit = this.routes
      .map((c, i) => ({ c, i }))
      .filter(({ c }) => c.family === family && c.dst === sel.dst)
      .sort((a, b) => a.c.metric - b.c.metric)
      .find(
        ({ c }) =>
          (sel.metric === 0 || c.metric === sel.metric) &&
          (sel.type === undefined || c.type === sel.type || family === 6) &&
          (sel.scope === undefined || family === 6 || c.scope === sel.scope) &&
          (sel.prefsrc === undefined || family === 6 || c.prefsrc === sel.prefsrc) &&
          (sel.protocol === undefined || c.protocol === sel.protocol) &&
          (sel.dev === undefined || c.dev === sel.dev) &&
          (sel.gateway === undefined || c.gateway === sel.gateway),
      );
    return hit ? hit.i : -1;
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
      const at = this.selectForDelete(parseDelete(line));
      if (at < 0) throw new SimError(`${line}: No such process`, NO_SUCH_PROCESS);
      this.log.push(`${line}: removed ${id(this.routes[at] as Route)}`);
      this.routes.splice(at, 1);
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

interface DeleteSelector {
  type?: string;
  dst: string;
  gateway?: string;
  dev?: string;
  prefsrc?: string;
  scope?: number;
  metric: number;
  protocol?: string;
}

/** A rendered `route replace|append` line back into a route. */
function parseRouteLine(line: string): Route {
  const t = line.split(" ");
  let i = 2;
  const type = /^[a-z]+$/.test(t[i] ?? "") ? (t[i++] as string) : "unicast";
  const dst = t[i++] ?? "";
  const r: Route = {
    family: dst.includes(":") ? 6 : 4,
    dst,
    dev: "",
    scope: 0,
    metric: 0,
    onlink: false,
    mtu: 0,
    protocol: "boot",
    type,
  };
  while (i < t.length) {
    const k = t[i++];
    if (k === "onlink") {
      r.onlink = true;
      continue;
    }
    const v = t[i++] ?? "";
    if (k === "via") r.gateway = v;
    else if (k === "dev") r.dev = v;
    else if (k === "src") r.prefsrc = v;
    else if (k === "scope") r.scope = Number(v);
    else if (k === "metric") r.metric = Number(v);
    else if (k === "proto") r.protocol = v;
    else if (k === "mtu") r.mtu = Number(v);
    else if (k !== "table" || v !== "main") throw new SimError(`unknown token ${k} in ${line}`);
  }
  return r;
}

/** What a rendered `route del` line asks the kernel for. */
function parseDelete(line: string): DeleteSelector {
  const t = line.split(" ");
  if (t[0] !== "route" || t[1] !== "del") throw new SimError(`not a route del: ${line}`);
  let i = 2;
  const type = /^[a-z]+$/.test(t[i] ?? "") ? t[i++] : undefined;
  const sel: DeleteSelector = { dst: t[i++] ?? "", metric: 0, ...(type ? { type } : {}) };
  for (; i < t.length; i += 2) {
    const v = t[i + 1] ?? "";
    switch (t[i]) {
      case "via":
        sel.gateway = v;
        break;
      case "dev":
        sel.dev = v;
        break;
      case "src":
        sel.prefsrc = v;
        break;
      case "scope":
        sel.scope = Number(v);
        break;
      case "metric":
        sel.metric = Number(v);
        break;
      case "proto":
        sel.protocol = v;
        break;
      case "table":
        // One model is one table; a caller with several keeps one model each (plan-tables tests).
        break;
      default:
        throw new SimError(`unknown token ${t[i]} in ${line}`);
    }
  }
  return sel;
}
