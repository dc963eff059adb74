/**
 * planNexthops and the route part of an Apply (plan-route-state.ts)
 * against a model of the kernel's nexthop objects (checked in a netns,
 * Linux 6.18): `replace` changes an object in place but refuses to turn a
 * group into a single one or back; a group's members must exist and be
 * single; deleting an object deletes the routes by it and takes it out of
 * every group (a group left empty goes too, with its routes); a route by
 * an object needs the object. Properties: the plan applies and yields
 * exactly the desired objects and routes; planning again gives nothing;
 * the restore (plan-restore.ts) puts the objects and routes back.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FullState } from "../../src/net/model/full-state";
import { type Link, makeRoute, type Nexthop, type Route } from "../../src/net/model/model";
import { planLinkPhase } from "../../src/net/plan/plan-link-phase";
import { sameNexthop } from "../../src/net/plan/plan-nexthops";
import { planStateRestore } from "../../src/net/plan/plan-restore";
import { planRouteState } from "../../src/net/plan/plan-route-state";

class KernelModel {
  readonly nexthops = new Map<number, Nexthop>();
  readonly routes = new Map<string, Route>();
  readonly log: string[] = [];

  constructor(nexthops: readonly Nexthop[], routes: readonly Route[]) {
    for (const n of nexthops) this.nexthops.set(n.id, n);
    for (const r of routes) this.routes.set(r.dst, r);
  }

  replaceNexthop(n: Nexthop): void {
    const old = this.nexthops.get(n.id);
    if (old && (old.group === undefined) !== (n.group === undefined))
      throw new Error(`nexthop replace id ${n.id}: Can not replace a nexthop group with a nexthop`);
    for (const m of n.group ?? []) {
      const member = this.nexthops.get(m.id);
      if (!member) throw new Error(`nexthop replace id ${n.id}: Invalid nexthop id ${m.id}`);
      if (member.group) throw new Error(`nexthop replace id ${n.id}: Nested groups not supported`);
    }
    this.log.push(`replace ${n.id}`);
    this.nexthops.set(n.id, n);
  }

  deleteNexthop(id: number): void {
    if (!this.nexthops.has(id)) throw new Error(`nexthop del id ${id}: No such object`);
    this.log.push(`delete ${id}`);
    this.nexthops.delete(id);
    for (const [dst, r] of this.routes) if (r.nhid === id) this.routes.delete(dst);
    for (const g of [...this.nexthops.values()]) {
      if (!g.group?.some((m) => m.id === id)) continue;
      const group = g.group.filter((m) => m.id !== id);
      if (group.length === 0) this.deleteNexthop(g.id);
      else this.nexthops.set(g.id, { ...g, group });
    }
  }

  addRoute(r: Route): void {
    if (r.nhid !== undefined && !this.nexthops.has(r.nhid))
      throw new Error(`route ${r.dst} nhid ${r.nhid}: Nexthop id does not exist`);
    this.log.push(`route ${r.dst} nhid ${r.nhid}`);
    this.routes.set(r.dst, r);
  }

  deleteRoute(r: Route): void {
    if (!this.routes.has(r.dst)) throw new Error(`route del ${r.dst}: No such process`);
    this.routes.delete(r.dst);
  }
}

const LINKS: Link[] = [
  {
    index: 2,
    name: "eth0",
    mac: "02:00:00:00:00:02",
    mtu: 1500,
    flags: ["UP"],
    kind: "veth",
    addresses: [],
  },
];

const arbSingle = (id: number): fc.Arbitrary<Nexthop> =>
  fc
    .record({
      kind: fc.constantFrom("via4", "via6", "dev6", "blackhole"),
      g: fc.constantFrom("1", "3"),
      onlink: fc.boolean(),
      protocol: fc.constantFrom("unspec", "static"),
    })
    .map(({ kind, g, onlink, protocol }): Nexthop => {
      const base = { id, onlink: false, blackhole: false, protocol };
      if (kind === "blackhole") return { ...base, family: 4, dev: "", blackhole: true };
      if (kind === "dev6") return { ...base, family: 6, dev: "eth0" };
      return kind === "via4"
        ? { ...base, family: 4, gateway: `10.0.0.${g}`, dev: "eth0", onlink }
        : { ...base, family: 6, gateway: `fd00::${g}`, dev: "eth0" };
    });

/** Objects 1-6, each a single one, a group of the single ones, or absent; routes by some of them. */
const arbSide = fc
  .tuple(
    fc.array(fc.constantFrom("single", "group", "none"), { minLength: 6, maxLength: 6 }),
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(1, 1, 2)), { minLength: 6, maxLength: 6 }),
    fc.tuple(...[1, 2, 3, 4, 5, 6].map((id) => arbSingle(id))),
    fc.subarray(["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16"]),
    fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
  )
  .map(([kinds, members, singles, dsts, picks]) => {
    const ids = [1, 2, 3, 4, 5, 6];
    const singleIds = ids.filter((id) => kinds[id - 1] === "single");
    const nexthops: Nexthop[] = [];
    for (const id of ids) {
      const kind = kinds[id - 1];
      if (kind === "single") nexthops.push(singles[id - 1] as Nexthop);
      if (kind === "group" && singleIds.length > 0) {
        const [seed = 0, weight = 1] = members[id - 1] ?? [];
        const group = singleIds
          .filter((_, k) => ((seed >> k) & 1) === 1 || k === seed % singleIds.length)
          .map((m) => ({ id: m, weight }));
        nexthops.push({
          id,
          family: 0,
          dev: "",
          onlink: false,
          blackhole: false,
          group,
          protocol: "unspec",
        });
      }
    }
    const routes: Route[] = nexthops.length
      ? dsts.map((dst, k) => ({
          ...makeRoute(4, dst, undefined, "", undefined, 0, 0, false, 0, "boot", "unicast"),
          table: 254,
          nhid: (nexthops[(picks[k] ?? 0) % nexthops.length] as Nexthop).id,
        }))
      : [];
    return { nexthops, routes };
  });

const state = (s: { nexthops: Nexthop[]; routes: Route[] }): FullState => ({
  links: LINKS,
  routes: s.routes,
  rules: [],
  neighbors: [],
  sysctls: new Map(),
  nexthops: s.nexthops,
});

/** Runs the plan's operations in the order of its lines: objects, routes, stale objects. */
function apply(model: KernelModel, plan: ReturnType<typeof planRouteState>): void {
  for (const o of plan.nexthops.heads) {
    if (o.op === "delete") model.deleteNexthop(o.nexthop.id);
    else model.replaceNexthop(o.nexthop);
  }
  for (const o of plan.routeOps) {
    if (o.op === "delete") model.deleteRoute(o.route);
    else model.addRoute(o.route);
  }
  for (const o of plan.nexthops.tails) model.deleteNexthop(o.nexthop.id);
}

const plan = (from: FullState, to: { nexthops: Nexthop[]; routes: Route[] }) =>
  planRouteState(from, from.routes, to, planLinkPhase(LINKS, []), { exact: true });

const objects = (list: Iterable<Nexthop>) =>
  [...list].sort((a, b) => a.id - b.id).map((n) => JSON.stringify(n));
const routesOf = (list: Iterable<Route>) => [...list].map((r) => `${r.dst} ${r.nhid}`).sort();

const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS) || 500 };

describe("planNexthops (kernel model of nexthop objects)", () => {
  it("applies without failure and yields exactly the desired objects and routes; planning again gives nothing", () => {
    fc.assert(
      fc.property(arbSide, arbSide, (cur, want) => {
        const model = new KernelModel(cur.nexthops, cur.routes);
        const p = plan(state(cur), want);
        try {
          apply(model, p);
        } catch (err) {
          throw new Error(`${(err as Error).message}\n${model.log.join("\n")}`);
        }
        expect(objects(model.nexthops.values())).toEqual(objects(want.nexthops));
        expect(routesOf(model.routes.values())).toEqual(routesOf(want.routes));
        const again = plan(
          state({ nexthops: [...model.nexthops.values()], routes: [...model.routes.values()] }),
          want,
        );
        expect([...again.nexthops.heads, ...again.nexthops.tails, ...again.routeOps]).toEqual([]);
        for (const n of want.nexthops) {
          const got = model.nexthops.get(n.id);
          expect(got && sameNexthop(got, n)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it("the restore puts objects and routes back from any point of the plan", () => {
    fc.assert(
      fc.property(arbSide, arbSide, fc.nat(), (cur, want, cut) => {
        const p = plan(state(cur), want);
        const ops = [
          ...p.nexthops.heads.map(
            (o) => (m: KernelModel) =>
              o.op === "delete" ? m.deleteNexthop(o.nexthop.id) : m.replaceNexthop(o.nexthop),
          ),
          ...p.routeOps.map(
            (o) => (m: KernelModel) =>
              o.op === "delete" ? m.deleteRoute(o.route) : m.addRoute(o.route),
          ),
          ...p.nexthops.tails.map((o) => (m: KernelModel) => m.deleteNexthop(o.nexthop.id)),
        ];
        const model = new KernelModel(cur.nexthops, cur.routes);
        for (const op of ops.slice(0, cut % (ops.length + 1))) op(model);
        const now = state({
          nexthops: [...model.nexthops.values()],
          routes: [...model.routes.values()],
        });
        const back = planStateRestore(state(cur), now);
        // The restore's lines, read back into operations on the model.
        for (const line of [...back.batch6First, ...back.batch]) {
          const w = line.split(" ");
          if (w[0] === "nexthop" && w[1] === "del") model.deleteNexthop(Number(w[3]));
          else if (w[0] === "nexthop") {
            const id = Number(w[3]);
            model.replaceNexthop(cur.nexthops.find((n) => n.id === id) as Nexthop);
          } else if (w[0] === "route" && w[1] === "del") model.deleteRoute({ dst: w[2] } as Route);
          else if (w[0] === "route")
            model.addRoute(cur.routes.find((r) => r.dst === w[2]) as Route);
        }
        expect(objects(model.nexthops.values())).toEqual(objects(cur.nexthops));
        expect(routesOf(model.routes.values())).toEqual(routesOf(cur.routes));
      }),
      RUNS,
    );
  });
});
