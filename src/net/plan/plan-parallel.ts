/**
 * Which route changes of a large plan may run in several `ip` processes at
 * once: the gateway routes of different tables, once every route they can
 * be checked against is in. Most of ip's time on a route line is the
 * kernel's, and the kernel runs that part for two processes side by side,
 * so two processes on two CPUs put a large table in sooner than one
 * (figures: bench/README.md, row 12, the gateway routes in two ip
 * processes). Pure; the runner decides whether the machine has the CPUs
 * (ip-runner.ts).
 *
 * Why the reordered plan does what the one-process plan does:
 * - The kernel checks a gateway when its route is added: IPv4 looks it up
 *   among routes of scope link or host only (fib_check_nh_v4_gw), so one
 *   gateway route never decides another's check; IPv6 refuses a gateway
 *   that resolves through a gateway (ip6_route_check_nh), and checks a
 *   link-local or onlink one without any lookup. Gateway routes of
 *   different tables are independent when none of them is looked up
 *   through IPv6 or has a scope of its own (IPv4 scope 0).
 * - Routes without a gateway are put in first, every table's (the plan
 *   puts each table's before its gateway routes, main's before table
 *   100's): a gateway check finds at least what it found before. Only
 *   unicast ones: an unreachable or prohibit route put in earlier could
 *   make a check that passed fail, through the rules.
 * - Nothing in the heads takes a route away: no deletes there, and no
 *   replace that overwrites a link route with a gateway route or moves one
 *   to another link.
 * Any plan not of that shape runs as before, in one process.
 */
import { hasGateway, type Route } from "../model/model";
import type { RouteOp } from "./routes/plan-routes";

/**
 * The fewest gateway route changes a plan must have for them to be split:
 * an extra process costs a start, which only a plan of thousands of lines
 * earns back (bench/README.md, row 12).
 */
export const PARALLEL_MIN_GATEWAY_ROUTES = 2000;

/** A plan's route operations in the order that lets the middle part run table by table at once. */
export interface ParallelRouteOps {
  /** Every table's routes without a gateway, in the plan's order. */
  first: RouteOp[];
  /** The gateway routes, one list per table (the plan's table order), each in the plan's order. */
  byTable: RouteOp[][];
  /** The deletes at the end, in the plan's order. */
  last: RouteOp[];
}

const isLinkLocal = (gateway: string) => /^fe[89ab]/i.test(gateway);

/** Whether the kernel checks `r`'s gateways without looking at any other table's gateway routes. */
function checkedAlone(r: Route): boolean {
  if (r.family === 4 && r.scope !== 0) return false;
  const paths = r.hops ?? [r];
  return paths.every(
    (p) =>
      p.gateway === undefined || !p.gateway.includes(":") || p.onlink || isLinkLocal(p.gateway),
  );
}

/**
 * The plan's route operations (planTables: each table's heads in table
 * order, then every table's deletes) rearranged for running the gateway
 * routes table by table at once; undefined when the plan is not of the
 * shape that makes that safe (above) or has fewer than
 * {@link PARALLEL_MIN_GATEWAY_ROUTES} gateway routes over two tables.
 */
export function parallelRouteOps(ops: readonly RouteOp[]): ParallelRouteOps | undefined {
  // Most plans are small: not walked (planApply runs twice an Apply).
  if (ops.length < PARALLEL_MIN_GATEWAY_ROUTES) return undefined;
  let tail = ops.length;
  while (tail > 0 && (ops[tail - 1] as RouteOp).op === "delete") tail--;
  if (tail === 0) return undefined;
  const first: RouteOp[] = [];
  const byTable = new Map<number, RouteOp[]>();
  let gateways = 0;
  for (let i = 0; i < tail; i++) {
    const o = ops[i] as RouteOp;
    if (o.op === "delete" || o.route.type !== "unicast") return undefined;
    const table = o.route.table ?? 254;
    const withGateway = byTable.get(table);
    if (!hasGateway(o.route)) {
      // A table's routes without a gateway come before its gateway routes.
      if (withGateway !== undefined) return undefined;
      const was = o.op === "replace" ? o.overwrites : undefined;
      if (was !== undefined && (hasGateway(was) || was.dev !== o.route.dev)) return undefined;
      first.push(o);
      continue;
    }
    if (!checkedAlone(o.route)) return undefined;
    if (o.op === "replace" && o.overwrites !== undefined && !hasGateway(o.overwrites))
      return undefined;
    if (withGateway === undefined) byTable.set(table, [o]);
    else withGateway.push(o);
    gateways++;
  }
  if (gateways < PARALLEL_MIN_GATEWAY_ROUTES || byTable.size < 2) return undefined;
  return { first, byTable: [...byTable.values()], last: ops.slice(tail) };
}

/**
 * A batch in three parts: `before` in one process, then the lists of
 * `together` each in a process of its own at once (each list in order),
 * then `after`; the batch as one process runs them in that order.
 */
export interface BatchParts {
  before: string[];
  together: string[][];
  after: string[];
}
