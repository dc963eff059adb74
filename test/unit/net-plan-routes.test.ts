/**
 * planRoutes: property tests against the kernel model in
 * test/support/route-sim.ts, for random current and desired tables over a
 * few links and prefixes (test/support/route-scenarios.ts). Examples from
 * the design: net-plan-routes-examples.test.ts; the planner it replaced as
 * oracle: net-plan-routes-oracle.test.ts.
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import { routeKey } from "../../src/net/model/model";
import { planRoutes, type RouteOp } from "../../src/net/plan/routes/plan-routes";
import { tableBeforeTouch, touchedRoutes } from "../../src/net/plan/routes/route-undo";
import { explain, same, simulate } from "../support/plan-story";
import { arbScenario, expectedTable, ids, ROLLBACK, RUNS } from "../support/route-scenarios";

describe("planRoutes properties (kernel model)", () => {
  it("(a, b) applies without failure and yields desired plus the kernel routes none supersedes", () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const ops = planRoutes(s.current, s.desired, { kernel: s.kernel });
        const sim = simulate(s, s.current, ops);
        // As sets: a route equal to a kernel one but for its protocol counts as that one.
        same(
          [...new Set(ids(sim.routes))],
          [...new Set(ids(expectedTable(s.desired, s.kernel)))],
          () => explain(s, ops, sim),
        );
      }),
      RUNS,
    );
  });

  it("(c) is idempotent: planning again from the result gives no operations", () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const ops = planRoutes(s.current, s.desired, { kernel: s.kernel });
        const sim = simulate(s, s.current, ops);
        const again = planRoutes(sim.routes, s.desired, { kernel: s.kernel });
        same(again, [], () => explain(s, ops, sim));
      }),
      RUNS,
    );
  });

  it("(d) exact mode from the result back to the snapshot restores it exactly (the rollback)", () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const ops = planRoutes(s.current, s.desired, { kernel: s.kernel });
        const after = simulate(s, s.current, ops).routes;
        const back = planRoutes(after, s.current, ROLLBACK);
        const sim = simulate(s, after, back);
        same(ids(sim.routes, true), ids(s.current, true), () => explain(s, back, sim));
      }),
      RUNS,
    );
  });

  it("(d') exact mode restores a snapshot from any point of a half-applied plan", () => {
    fc.assert(
      fc.property(arbScenario, fc.nat(), (s, cut) => {
        const ops = planRoutes(s.current, s.desired, { kernel: s.kernel });
        const half = simulate(s, s.current, ops.slice(0, cut % (ops.length + 1))).routes;
        const back = planRoutes(half, s.current, ROLLBACK);
        const sim = simulate(s, half, back);
        same(ids(sim.routes, true), ids(s.current, true), () => explain(s, back, sim));
      }),
      RUNS,
    );
  });

  it("(d'') the record of only what a plan touches (route-undo.ts) restores the snapshot from any point of it", () => {
    fc.assert(
      fc.property(arbScenario, fc.nat(), (s, cut) => {
        const ops = planRoutes(s.current, s.desired, { kernel: s.kernel });
        const half = simulate(s, s.current, ops.slice(0, cut % (ops.length + 1))).routes;
        const target = tableBeforeTouch(half, touchedRoutes(ops));
        const back = planRoutes(half, target, ROLLBACK);
        const sim = simulate(s, half, back);
        same(ids(sim.routes, true), ids(s.current, true), () => explain(s, back, sim));
      }),
      RUNS,
    );
  });

  it("(e) deletes come after every replace (before, in a restore), and gateway-less replaces before gateway ones", () => {
    fc.assert(
      fc.property(arbScenario, fc.boolean(), (s, exact) => {
        const ops = exact
          ? planRoutes(s.desired, s.current, ROLLBACK)
          : planRoutes(s.current, s.desired, { kernel: s.kernel });
        // The one exception: IPv6 cannot hold two routes with the same key,
        // link and gateway, so such a twin (and the routes of that key and
        // link its delete could hit) is deleted just before the append.
        const early = (o: RouteOp, i: number) => {
          // A run of deletes of that key and link just before the append
          // (an IPv6 delete without a gateway hits any route of them).
          let j = i;
          while (ops[j]?.op === "delete") j++;
          const next = ops[j];
          return (
            o.op === "delete" &&
            next?.op === "append" &&
            o.route.family === 6 &&
            routeKey(o.route) === routeKey(next.route) &&
            o.route.dev === next.route.dev
          );
        };
        // A restore (exact) deletes first: a delete names a route by what it
        // has, and must not hit a twin that a replace put back.
        const del = exact ? -1 : 2;
        const kinds = ops
          .filter((o, i) => !early(o, i))
          .map((o) => (o.op === "delete" ? del : o.route.gateway ? 1 : 0));
        same(kinds, [...kinds].sort(), () => explain(s, ops));
      }),
      RUNS,
    );
  });
});
