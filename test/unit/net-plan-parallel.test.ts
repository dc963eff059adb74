/**
 * plan-parallel.ts and ip-batch-parts.ts: which large plans may run their
 * gateway routes table by table at once, the order they then run in (every
 * table's routes without a gateway first, each table's own order kept, the
 * deletes last), and how the tables are shared out over processes (every
 * line once, in its table's order, with its index in the whole batch).
 * Any plan that is not of the safe shape has no parts and keeps its order.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inWholeBatch, shareOut } from "../../src/net/iproute/ip-batch-parts";
import type { DesiredState, FullState } from "../../src/net/model/full-state";
import type { Link, Route } from "../../src/net/model/model";
import { IpBatchError } from "../../src/net/parse/ip-results";
import { planApply } from "../../src/net/plan/plan-apply";
import { PARALLEL_MIN_GATEWAY_ROUTES, parallelRouteOps } from "../../src/net/plan/plan-parallel";
import { planTables } from "../../src/net/plan/plan-tables";
import { route } from "../support/routes";

const TABLES = [254, 100, 200, 300];

/** `perTable` gateway routes in each table, after one link route per table. */
function tables(perTable: number, over: (table: number, i: number) => Partial<Route> = () => ({})) {
  const routes: Route[] = [];
  for (const table of TABLES) {
    routes.push(route({ table, dst: `10.${table % 256}.0.0/16`, scope: 253 }));
    for (let i = 0; i < perTable; i++) {
      routes.push(
        route({
          table,
          dst: `172.${16 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`,
          gateway: `10.${table % 256}.0.1`,
          ...over(table, i),
        }),
      );
    }
  }
  return routes;
}

const PER_TABLE = PARALLEL_MIN_GATEWAY_ROUTES / TABLES.length;

describe("parallelRouteOps", () => {
  it("puts every table's link routes first, then each table's gateway routes in its order", () => {
    const ops = planTables([], tables(PER_TABLE), { exact: true });
    const p = parallelRouteOps(ops);
    expect(p).toBeDefined();
    if (!p) return;
    expect(p.first.map((o) => [o.route.table, o.route.gateway])).toEqual(
      TABLES.map((t) => [t, undefined]),
    );
    expect(p.byTable.map((l) => l[0]?.route.table)).toEqual(TABLES);
    for (const [n, list] of p.byTable.entries()) {
      const serial = ops.filter((o) => o.route.table === TABLES[n] && o.route.gateway);
      expect(list).toEqual(serial);
    }
    expect(p.last).toEqual([]);
  });

  it("keeps the deletes at the end, in the plan's order", () => {
    const stale = [
      route({ table: 100, dst: "192.0.2.0/24", gateway: "10.100.0.1", protocol: "static" }),
      route({ table: 300, dst: "198.51.100.0/24", dev: "eth0", scope: 253 }),
    ];
    const ops = planTables(stale, tables(PER_TABLE), { exact: true });
    const p = parallelRouteOps(ops);
    expect(p?.last.map((o) => [o.op, o.route.dst])).toEqual([
      ["delete", "192.0.2.0/24"],
      ["delete", "198.51.100.0/24"],
    ]);
  });

  it("needs at least PARALLEL_MIN_GATEWAY_ROUTES gateway routes over two tables", () => {
    const fewer = tables(PER_TABLE);
    fewer.splice(1, 1);
    expect(parallelRouteOps(planTables([], fewer, { exact: true }))).toBeUndefined();
    const oneTable = tables(PARALLEL_MIN_GATEWAY_ROUTES).filter((r) => r.table === 254);
    expect(parallelRouteOps(planTables([], oneTable, { exact: true }))).toBeUndefined();
  });

  it("leaves a plan in one process when a route is not unicast", () => {
    const routes = tables(PER_TABLE);
    routes.push(route({ table: 200, dst: "203.0.113.0/24", dev: "", type: "blackhole" }));
    expect(parallelRouteOps(planTables([], routes, { exact: true }))).toBeUndefined();
  });

  it("leaves a plan in one process when a gateway check could look at another table", () => {
    const global6 = tables(PER_TABLE);
    global6.push(
      route({ family: 6, table: 200, dst: "fd01::/64", gateway: "fd00::1", metric: 1024 }),
    );
    expect(parallelRouteOps(planTables([], global6, { exact: true }))).toBeUndefined();
    const scoped = tables(PER_TABLE, (t, i) => (t === 100 && i === 7 ? { scope: 253 } : {}));
    expect(parallelRouteOps(planTables([], scoped, { exact: true }))).toBeUndefined();
    // A link-local or onlink IPv6 gateway is checked without a lookup.
    for (const extra of [{ gateway: "fe80::1" }, { gateway: "fd00::1", onlink: true }]) {
      const ok = tables(PER_TABLE);
      ok.push(route({ family: 6, table: 200, dst: "fd01::/64", metric: 1024, ...extra }));
      expect(parallelRouteOps(planTables([], ok, { exact: true }))).toBeDefined();
    }
  });

  it("leaves a plan in one process when a gateway route overwrites a link route", () => {
    const dst = "172.16.0.9/32";
    const current = [route({ table: 100, dst, dev: "eth0", scope: 253 })];
    const ops = planTables(current, tables(PER_TABLE), { exact: false });
    expect(ops.some((o) => o.op === "replace" && o.overwrites?.dst === dst)).toBe(true);
    expect(parallelRouteOps(ops)).toBeUndefined();
  });
});

describe("planApply with parts", () => {
  const link: Link = {
    index: 2,
    name: "eth0",
    mac: "02:00:00:00:00:01",
    mtu: 1500,
    flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
    kind: "veth",
    addresses: [{ family: 4, address: "10.254.0.2", prefix: 16, scope: "global" }],
  };
  const current: FullState = {
    links: [link],
    routes: [],
    rules: [],
    neighbors: [],
    sysctls: new Map(),
  };
  const want = (routes: Route[]): DesiredState => ({
    links: [
      {
        mac: link.mac,
        name: "eth0",
        mtu: 1500,
        noarp: false,
        up: true,
        addresses: [{ family: 4, address: "10.254.0.2", prefix: 16 }],
      },
    ],
    routes,
    rules: [{ family: 4, priority: 100, not: false, action: "lookup", table: 100 }],
    neighbors: [],
    nexthops: [],
    sysctls: [],
  });

  it("has parts that are its batch in order, the rules after them", () => {
    const plan = planApply(current, want(tables(PER_TABLE)), { exact: true });
    const parts = plan.batchParts;
    expect(parts).toBeDefined();
    if (!parts) return;
    expect([...parts.before, ...parts.together.flat(), ...parts.after]).toEqual(plan.batch);
    expect(parts.together).toHaveLength(TABLES.length);
    expect(parts.together.flat().every((l) => l.includes(" via "))).toBe(true);
    expect(parts.after.at(-1)).toMatch(/^rule add priority 100 /);
  });

  it("has no parts for a small plan, whose order stays the planner's", () => {
    const plan = planApply(current, want(tables(10)), { exact: true });
    expect(plan.batchParts).toBeUndefined();
    const tableOf = (l: string) => / table (\S+)/.exec(l)?.[1];
    const routeTables = plan.batch.filter((l) => l.startsWith("route ")).map(tableOf);
    // Table by table: all of main's, then 100's, ...
    expect(routeTables).toEqual(["main", "100", "200", "300"].flatMap((t) => Array(11).fill(t)));
  });
});

describe("shareOut", () => {
  it("gives every line once, in its list's order, with its index in the whole batch", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 50 }),
        (sizes, processes, start) => {
          const together = sizes.map((n, t) => Array.from({ length: n }, (_, k) => `t${t} ${k}`));
          const whole = [...Array(start).fill("before"), ...together.flat()];
          const shares = shareOut(together, start, processes);
          expect(shares).toHaveLength(Math.min(processes, sizes.length));
          const seen = shares.flatMap((s) => s.at);
          expect([...seen].sort((a, b) => a - b)).toEqual(
            Array.from({ length: whole.length - start }, (_, i) => start + i),
          );
          for (const s of shares) {
            for (const [i, l] of s.lines.entries()) expect(whole[s.at[i] as number]).toBe(l);
            // Within a share, a list's lines keep their order.
            for (let i = 1; i < s.at.length; i++) {
              const [a, b] = [s.lines[i - 1] as string, s.lines[i] as string];
              if (a.split(" ")[0] === b.split(" ")[0])
                expect(s.at[i] as number).toBe((s.at[i - 1] as number) + 1);
            }
          }
          // Largest list first to the smallest share: no share is larger
          // than the smallest by more than the largest list.
          const lengths = shares.map((s) => s.lines.length);
          expect(Math.max(...lengths) - Math.min(...lengths)).toBeLessThanOrEqual(
            Math.max(...sizes),
          );
        },
      ),
    );
  });

  it("names a refused line by its index in the whole batch", () => {
    const err = new IpBatchError(2, "route replace x", "Nexthop has invalid gateway", "invalid");
    const moved = inWholeBatch(err, (i) => [40, 41, 57][i] as number) as IpBatchError;
    expect([moved.lineIndex, moved.line, moved.message]).toEqual([57, err.line, err.message]);
    const killed = IpBatchError.killed(new IpBatchError(undefined, undefined, "gone", "aborted"));
    expect(inWholeBatch(killed, () => 9)).toBe(killed);
  });
});
