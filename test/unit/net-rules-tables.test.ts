/**
 * Routes of every table: property tests of planTables against a kernel
 * model per table (test/support/route-sim.ts), and the parser of every
 * table's routes. Policy rules: net-rules-parse.test.ts,
 * net-rules-plan.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Link, type Route, routeIdentity, routeKey } from "../../src/net/model/model";
import { parseAllTableRoutes } from "../../src/net/parse/parse-ip-json";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { planTables } from "../../src/net/plan/plan-tables";
import type { RouteOp } from "../../src/net/plan/routes/plan-routes";
import { RouteSim } from "../support/route-sim";

const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS) || 300 };

const LINKS: Link[] = ["eth0", "eth1"].map((name, i) => ({
  index: i + 2,
  name,
  mac: `02:00:00:00:00:0${i}`,
  mtu: 1500,
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  kind: "veth",
  addresses: [{ family: 4, address: `10.0.${i}.2`, prefix: 24, scope: "global" }],
}));
const KERNEL = impliedKernelRoutes(LINKS).map((r) => ({ ...r, table: 254 }));

function route(table: number, dst: string, dev: string, gw?: string): Route {
  return {
    family: 4,
    table,
    dst,
    ...(gw ? { gateway: gw } : {}),
    dev,
    scope: gw ? 0 : 253,
    metric: 0,
    // onlink: the model (like the kernel) then needs no route to the gateway in this table.
    onlink: gw !== undefined,
    mtu: 0,
    protocol: "boot",
    type: "unicast",
  };
}

const ROUTES: Route[] = [254, 100, 200].flatMap((t) => [
  route(t, "0.0.0.0/0", "eth0", "10.0.0.1"),
  route(t, "0.0.0.0/0", "eth1", "10.0.1.1"),
  route(t, "10.0.0.0/24", "eth0", "10.0.0.1"),
  route(t, "10.0.0.1/32", "eth0"),
  route(t, "10.9.0.0/16", "eth1", "10.0.1.1"),
  { ...route(t, "10.8.0.0/16", ""), type: "blackhole", scope: 0 },
]);

/** One model table per table id. */
function simulateTables(current: readonly Route[], ops: readonly RouteOp[]): Route[] {
  const sims = new Map<number, RouteSim>();
  const sim = (t: number) => {
    let s = sims.get(t);
    if (!s) {
      s = new RouteSim(current.filter((r) => (r.table ?? 254) === t));
      sims.set(t, s);
    }
    return s;
  };
  for (const r of current) sim(r.table ?? 254);
  for (const op of ops) sim(op.route.table ?? 254).apply(op);
  return [...sims.entries()].flatMap(([t, s]) => s.routes.map((r) => ({ ...r, table: t })));
}

const tableIds = (routes: readonly Route[]) =>
  [...new Set(routes.map((r) => `${r.table ?? 254} ${routeIdentity(r, false)}`))].sort();

/** Routes may hold one per (table, key, dev): what a validated request holds. */
function unique(routes: readonly Route[]): Route[] {
  const seen = new Set<string>();
  return routes.filter((r) => {
    const k = `${r.table} ${r.dst} ${r.dev}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

const tableKey = (r: Route) => `${r.table ?? 254} ${routeKey(r)}`;

/**
 * Whether the delete at `i` is one of a key's routes deleted just before
 * that key's routes are added again (a rebuild: routes `ip route append`
 * made, put back in their order; plan-routes.ts): the run of deletes of
 * its key is followed by an addition of that key.
 */
function rebuilding(ops: readonly RouteOp[], i: number): boolean {
  const key = tableKey((ops[i] as RouteOp).route);
  let j = i;
  while (ops[j]?.op === "delete" && tableKey((ops[j] as RouteOp).route) === key) j++;
  const next = ops[j];
  return next !== undefined && next.op !== "delete" && tableKey(next.route) === key;
}

describe("planTables properties (a kernel model per table)", () => {
  it("every table ends as asked (main keeps the kernel routes none supersedes unless exact); deletes last; idempotent; exact restores", () => {
    fc.assert(
      fc.property(
        fc.subarray(KERNEL),
        fc.subarray(ROUTES),
        fc.subarray(ROUTES),
        fc.boolean(),
        (kernelLeft, cur0, want0, exact) => {
          const current = unique([...kernelLeft, ...cur0]);
          const desired = unique(want0);
          const ops = planTables(current, desired, { exact, kernel: KERNEL });
          const after = simulateTables(current, ops);
          const superseded = (k: Route) =>
            desired.some((d) => (d.table ?? 254) === 254 && d.dst === k.dst && d.dev === k.dev);
          const expected = exact ? desired : [...desired, ...KERNEL.filter((k) => !superseded(k))];
          expect(tableIds(after)).toEqual(tableIds(expected));
          const firstDel = ops.findIndex((o, i) => o.op === "delete" && !rebuilding(ops, i));
          if (firstDel >= 0) expect(ops.slice(firstDel).every((o) => o.op === "delete")).toBe(true);
          expect(planTables(after, desired, { exact, kernel: KERNEL })).toEqual([]);
          const back = simulateTables(after, planTables(after, current, { exact: true }));
          expect(tableIds(back)).toEqual(tableIds(current));
        },
      ),
      RUNS,
    );
  });
});

describe("parseAllTableRoutes", () => {
  it("keeps every table with its id; IPv6 unreachable routes (filed under lo) have no device", () => {
    const doc = [
      { type: "throw", dst: "10.8.0.0/16", table: "300", flags: [] },
      { dst: "default", gateway: "10.248.246.145", dev: "eth0", table: "100", flags: [] },
      {
        type: "local",
        dst: "10.248.246.146",
        dev: "eth0",
        table: "local",
        protocol: "kernel",
        scope: "host",
        prefsrc: "10.248.246.146",
        flags: [],
      },
      {
        type: "unreachable",
        dst: "default",
        dev: "lo",
        table: "300",
        metric: 1024,
        flags: [],
        pref: "medium",
      },
      { dst: "fe80::/64", dev: "eth0", protocol: "kernel", metric: 256, flags: [], pref: "medium" },
    ];
    const r = parseAllTableRoutes(doc);
    expect(r.map((x) => [x.table, x.type, x.dst, x.dev, x.family])).toEqual([
      [300, "throw", "10.8.0.0/16", "", 4],
      [100, "unicast", "0.0.0.0/0", "eth0", 4],
      [255, "local", "10.248.246.146/32", "eth0", 4],
      [300, "unreachable", "::/0", "", 6],
      [254, "unicast", "fe80::/64", "eth0", 6],
    ]);
  });
});
