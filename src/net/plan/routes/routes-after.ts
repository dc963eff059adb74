/**
 * routesAfter: the planner's own account of a batch that stopped part-way,
 * for a restore when the table cannot be read. Pure.
 */
import type { Route } from "../../model/model";
import type { RouteOp } from "./plan-routes";

/**
 * The table after the first `count` operations of `ops` (planned against
 * `current`) went through: what a batch that stopped there left behind, by
 * the planner's own account. Used to plan a restore when the table cannot
 * be read.
 */
export function routesAfter(
  current: readonly Route[],
  ops: readonly RouteOp[],
  count: number,
): Route[] {
  const gone = new Set<Route>();
  const added: Route[] = [];
  for (const op of ops.slice(0, count)) {
    if (op.op === "delete") {
      gone.add(op.route);
      continue;
    }
    if (op.op === "replace" && op.overwrites) gone.add(op.overwrites);
    added.push(op.route);
  }
  return [...current.filter((r) => !gone.has(r)), ...added];
}
