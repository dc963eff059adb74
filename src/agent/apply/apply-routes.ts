/**
 * Applies a route plan all or nothing. One `ip -batch` for the plan; on any
 * failure, a killed ip or a cancelled call, the table is put back to the
 * snapshot before the error goes out, so the caller's failure always means
 * "nothing changed". The one failure that is not one: a stale route the
 * kernel removed by itself meanwhile (its link went down, its gateway's
 * address went away) is already where the plan wanted it.
 */

import { codeOfNetError, toTtrpcError } from "../../common/error-status";
import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import { describeRoute, type Route } from "../../net/model/model";
import { IpBatchError } from "../../net/parse/ip-results";
import { renderRouteOps } from "../../net/plan/render-batch";
import { isManaged, planRoutes, type RouteOp } from "../../net/plan/routes/plan-routes";
import { type TouchedRoutes, tableBeforeTouch } from "../../net/plan/routes/route-undo";
import { routesAfter } from "../../net/plan/routes/routes-after";
import { TtrpcError } from "../../ttrpc/codes";
import { noteRollback } from "./rollbacks";

/**
 * Runs `ops` (planned against `before`, the table as read) with `signal` as
 * the call's: an abort kills the batch. Returns the table read back by the
 * same `ip` (one process for change and read-back). On failure restores `before` and
 * throws a TtrpcError naming the route that failed and iproute2's words, or
 * the abort's reason; a restore that could not finish is logged and named.
 */
export async function applyRoutePlan(
  ip: IpRunner,
  log: Logger,
  before: readonly Route[],
  ops: readonly RouteOp[],
  signal: AbortSignal,
): Promise<Route[]> {
  const lines = renderRouteOps(ops);
  let start = 0;
  for (;;) {
    try {
      // The read-back rides in the same process as the change.
      return await ip.batchThenRoutes(start === 0 ? lines : lines.slice(start), { signal });
    } catch (err) {
      const at =
        err instanceof IpBatchError && err.lineIndex !== undefined
          ? start + err.lineIndex
          : undefined;
      const op = at === undefined ? undefined : ops[at];
      if (op && isAlreadyGone(op, err) && !signal.aborted) {
        // ESRCH on `route del`: the kernel got there first. Carry on after it.
        log.info("stale route already gone", { route: describeRoute(op.route) });
        start = (at as number) + 1;
        continue;
      }
      // Without a line, ip was killed: any prefix may have gone through.
      const problem = await restoreRoutes(ip, log, before, { ops, applied: at ?? ops.length });
      throw explain(err, op, problem);
    }
  }
}

function isAlreadyGone(op: RouteOp, err: unknown): boolean {
  return (
    op.op === "delete" &&
    op.reason === "stale" &&
    err instanceof IpBatchError &&
    /No such process/.test(err.ipMessage)
  );
}

/**
 * Puts `before` back (also a start's restore after a crash, recover.ts).
 * The table is read to plan the restore; when that read fails, the plan's
 * own account of what its first `applied` operations did stands in for it,
 * if there is one. Never throws: returns what went wrong, or undefined.
 */
export async function restoreRoutes(
  ip: IpRunner,
  log: Logger,
  before: readonly Route[],
  undo?: { ops: readonly RouteOp[]; applied: number },
): Promise<string | undefined> {
  return restoreTo(ip, log, async () => {
    try {
      return { now: await ip.readRoutes(), target: before };
    } catch (err) {
      if (undo === undefined) throw err;
      log.warn("cannot read the routes to restore them: undoing the plan's operations instead", {
        error: (err as Error).message,
        applied: undo.applied,
      });
      return { now: routesAfter(before, undo.ops, undo.applied), target: before };
    }
  });
}

/**
 * A start's restore of an UpdateRoutes the last agent left unfinished, from
 * its record of the routes the plan touched (route-undo.ts): the table is
 * read, and what the plan did to it undone. Never throws.
 */
export function restoreTouchedRoutes(
  ip: IpRunner,
  log: Logger,
  touched: TouchedRoutes,
): Promise<string | undefined> {
  return restoreTo(ip, log, async () => {
    const now = await ip.readRoutes();
    return { now, target: tableBeforeTouch(now, touched) };
  });
}

/** Makes the managed table `target` exactly, planned from `now`; what went wrong, or undefined. */
async function restoreTo(
  ip: IpRunner,
  log: Logger,
  read: () => Promise<{ now: readonly Route[]; target: readonly Route[] }>,
): Promise<string | undefined> {
  let lines: string[];
  try {
    const { now, target } = await read();
    const exact = target.filter((r) => isManaged(r, true));
    const plan = planRoutes(now, exact, { exact: true, keepLinkless: true, deletesFirst: true });
    lines = renderRouteOps(plan);
    await ip.batch(lines, { force: true });
  } catch (err) {
    const problem = (err as Error).message;
    log.error("restore incomplete", { what: "routes", error: problem });
    noteRollback("routes", false);
    return problem;
  }
  log.info("restored state after a failed change", { what: "routes", operations: lines.length });
  noteRollback("routes", true);
  return undefined;
}

/** The caller's error: the failed route and ip's words; a cancelled call's reason. */
function explain(err: unknown, op: RouteOp | undefined, problem: string | undefined): TtrpcError {
  const tail = problem === undefined ? "" : ` (restore incomplete: ${problem})`;
  if (err instanceof IpBatchError && op) {
    const verb = op.op === "delete" ? "removing route" : "route";
    const code = codeOfNetError(err);
    return new TtrpcError(`${verb} ${describeRoute(op.route)}: ${err.ipMessage}${tail}`, code, {
      cause: err,
    });
  }
  const e = toTtrpcError(err);
  if (err instanceof IpBatchError) {
    const what = problem === undefined ? "routes not changed" : "routes";
    return new TtrpcError(`${what}: ${err.ipMessage}${tail}`, e.code, { cause: err });
  }
  return tail ? new TtrpcError(`${e.message}${tail}`, e.code, { cause: err }) : e;
}
