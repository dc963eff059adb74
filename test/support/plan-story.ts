/**
 * What the planners' property tests (net-plan-routes*.test.ts) share: a
 * plan applied to the kernel model, and on failure the whole story
 * (current, desired and kernel tables, the plan, the model's log).
 */
import { expect } from "vitest";
import { type Route, routeIdentity } from "../../src/net/model/model";
import type { RouteOp } from "../../src/net/plan/routes/plan-routes";
import { RouteSim } from "./route-sim";

export interface Story {
  current: readonly Route[];
  desired: readonly Route[];
  kernel?: readonly Route[];
}

export function explain(s: Story, ops: readonly RouteOp[], sim?: RouteSim): string {
  const ids = (rs: readonly Route[]) => rs.map((r) => routeIdentity(r, true));
  return JSON.stringify(
    {
      current: ids(s.current),
      desired: ids(s.desired),
      ...(s.kernel ? { kernel: ids(s.kernel) } : {}),
      ops: ops.map((o) => `${o.op} ${routeIdentity(o.route, true)}`),
      log: sim?.log,
    },
    null,
    1,
  );
}

/** Applies `ops` to `table` in the model; a failure throws with the whole story. */
export function simulate(s: Story, table: readonly Route[], ops: readonly RouteOp[]): RouteSim {
  const sim = new RouteSim(table);
  try {
    return sim.applyAll(ops);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${explain(s, ops, sim)}`);
  }
}

/** toEqual, with the (costly) explanation built only on failure. */
export function same<T>(got: T, want: T, why: () => string): void {
  if (JSON.stringify(got) !== JSON.stringify(want)) expect(got, why()).toEqual(want);
}
