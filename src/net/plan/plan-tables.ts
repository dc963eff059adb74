/**
 * planTables: routes in every table. Each table is planned by planRoutes on
 * its own (a table is what the kernel keys routes within), then the plans
 * are merged: every table's additions first (main, then the others in id
 * order), then every table's deletions, so that no table is left without a
 * route while another still points traffic at it. Pure.
 *
 * What the kernel owns is kept unless the request says otherwise:
 * - table local: its kernel routes (local, broadcast, multicast of the
 *   addresses) are never deleted; other routes there are declarative;
 * - table main: the prefix routes of the addresses (`kernel`) are put back
 *   unless a desired route supersedes them; with `exact` the request lists
 *   the table completely, kernel routes included (the sbr pod's empty main);
 * - other tables: exactly the desired routes (kernel-protocol routes a plugin
 *   copied there stay unless `exact`).
 */
import type { Route } from "../model/model";
import { TABLE_LOCAL, TABLE_MAIN } from "../vocabulary/routes";
import { planRoutes, type RouteOp } from "./routes/plan-routes";

export interface TablePlanOptions {
  /** The desired routes are every table's complete content (local's kernel routes aside). */
  exact?: boolean;
  /** The main table's implied prefix routes (impliedKernelRoutes), for the non-exact mode. */
  kernel?: readonly Route[];
}

/** The table of a route: main when it names none. */
export const tableOf = (r: Pick<Route, "table">): number => r.table ?? TABLE_MAIN;

function byTable(routes: readonly Route[]): Map<number, Route[]> {
  const m = new Map<number, Route[]>();
  // Routes come in runs of one table (as read, as Get answers them): the
  // list of the run's table is at hand.
  let runTable: number | undefined;
  let run: Route[] = [];
  for (const r of routes) {
    const t = tableOf(r);
    const withTable = r.table === undefined ? { ...r, table: t } : r;
    if (t !== runTable) {
      runTable = t;
      const list = m.get(t);
      run = list ?? [];
      if (!list) m.set(t, run);
    }
    run.push(withTable);
  }
  return m;
}

export function planTables(
  current: readonly Route[],
  desired: readonly Route[],
  options: TablePlanOptions = {},
): RouteOp[] {
  const cur = byTable(current);
  const want = byTable(desired);
  // Main always: its kernel routes come back even when neither side lists a main route.
  const ids = [...new Set([TABLE_MAIN, ...cur.keys(), ...want.keys()])].sort((a, b) =>
    a === TABLE_MAIN ? -1 : b === TABLE_MAIN ? 1 : a - b,
  );
  const heads: RouteOp[] = [];
  const tails: RouteOp[] = [];
  for (const id of ids) {
    const c = cur.get(id) ?? [];
    const d = want.get(id) ?? [];
    let ops: RouteOp[];
    if (id === TABLE_LOCAL) {
      ops = planRoutes(c, d);
    } else if (options.exact) {
      ops = planRoutes(c, d, { exact: true });
    } else if (id === TABLE_MAIN) {
      const kernel = (options.kernel ?? []).map((k) => ({ ...k, table: TABLE_MAIN }));
      ops = planRoutes(c, d, { kernel });
    } else {
      ops = planRoutes(c, d);
    }
    // planRoutes ends with its superseded and stale deletes: they wait for every table's additions.
    let split = ops.length;
    while (split > 0 && (ops[split - 1] as RouteOp).op === "delete") split--;
    heads.push(...ops.slice(0, split));
    tails.push(...ops.slice(split));
  }
  return [...heads, ...tails];
}
