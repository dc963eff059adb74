/**
 * planRoutes over the whole route vocabulary: tos and IPv6
 * `from` in the key, multipath paths, nexthop objects, IPv4 via IPv6,
 * every route type, attributes (metrics with locks, pref, realms, the
 * volatile expires), and the duplicates `ip route append` makes, against
 * the kernel model of test/support/route-sim.ts (IPv6 siblings included).
 * Properties as in net-plan-routes.test.ts: the plan applies and yields
 * the desired table (IPv4 routes of one key in the desired order: the
 * kernel uses the first that works), planning again gives nothing, and
 * the rollback restores the table read before, from the end or from any
 * point of the plan.
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import {
  type Attr,
  type Hop,
  hasGateway,
  type Link,
  type Route,
  routeIdentity,
  routeKey,
} from "../../src/net/model/model";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { planRoutes } from "../../src/net/plan/routes/plan-routes";
import { ecmpCapable } from "../../src/net/plan/routes/route-missing";
import { explain, same, simulate } from "../support/plan-story";
import { contains, RouteSim } from "../support/route-sim";

const link = (index: number, name: string, v4: string, v6: string): Link => ({
  index,
  name,
  mac: `02:00:00:00:00:0${index}`,
  mtu: 1500,
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  kind: "veth",
  addresses: [
    { family: 4, address: v4, prefix: 24, scope: "global" },
    { family: 6, address: v6, prefix: 64, scope: "global" },
  ],
});
const LINKS = [
  link(2, "eth0", "10.0.0.2", "2001:db8:1::2"),
  link(3, "eth1", "10.0.1.2", "2001:db8:2::2"),
];
const KERNEL = impliedKernelRoutes(LINKS);

/** Gateways each link reaches through its kernel routes, per family; 192.0.2.x only onlink. */
const GWS: Record<string, Record<4 | 6, string[]>> = {
  eth0: { 4: ["10.0.0.1", "10.0.0.3"], 6: ["2001:db8:1::1", "2001:db8:1::3"] },
  eth1: { 4: ["10.0.1.1"], 6: ["2001:db8:2::1"] },
};
const DSTS: Record<4 | 6, string[]> = {
  4: ["0.0.0.0/0", "10.9.0.0/16", "100.64.0.0/12", "10.0.0.0/24", "198.51.100.7/32"],
  6: ["::/0", "2001:db8:9::/48", "2001:db8:1::/64", "fd00:5::/64"],
};
const ATTRS: Record<4 | 6, Attr[]> = {
  4: [
    ["advmss", "1200"],
    ["congctl", "cubic"],
    ["quickack", "1"],
    ["realms", "7"],
  ],
  6: [
    ["advmss", "1400"],
    ["expires", "600"],
    ["hoplimit", "9"],
    ["pref", "high"],
  ],
};

/** A route of the vocabulary; `expires` drawn anew each time (a countdown). */
const arbRoute: fc.Arbitrary<Route> = fc
  .record({
    family: fc.constantFrom<4 | 6>(4, 4, 6),
    dst: fc.nat(),
    form: fc.constantFrom(
      "via",
      "via",
      "dev",
      "multipath",
      "nhid",
      "inet6",
      "linkless",
      "local",
      "anycast",
    ),
    dev: fc.constantFrom("eth0", "eth1"),
    g: fc.nat(),
    hopSeed: fc.array(
      fc.tuple(fc.constantFrom("eth0", "eth1"), fc.nat(), fc.boolean(), fc.constantFrom(1, 2)),
      {
        minLength: 2,
        maxLength: 3,
      },
    ),
    tos: fc.constantFrom(0, 0, 0, 0x04, 0x20),
    from: fc.constantFrom(undefined, undefined, undefined, "fd00:1::/64"),
    metric: fc.constantFrom(0, 0, 5),
    attrs: fc.subarray([0, 1, 2, 3]),
    lock: fc.boolean(),
    mtu: fc.constantFrom(0, 0, 1400),
    protocol: fc.constantFrom("boot", "boot", "static"),
    expires: fc.integer({ min: 100, max: 900 }),
  })
  .map((g): Route => {
    const f = g.family;
    const v4 = f === 4;
    const dst = DSTS[f][g.dst % DSTS[f].length] as string;
    const base: Route = {
      family: f,
      dst,
      dev: g.dev,
      scope: 0,
      metric: v4 ? g.metric : g.metric || 1024,
      onlink: false,
      mtu: g.mtu,
      protocol: g.protocol,
      type: "unicast",
    };
    const gws = GWS[g.dev]?.[f] ?? [];
    let r: Route;
    switch (g.form) {
      case "via":
        r = { ...base, gateway: gws[g.g % gws.length] as string };
        break;
      case "dev":
        r = { ...base, scope: v4 ? 253 : 0 };
        break;
      case "multipath": {
        const seen = new Set<string>();
        const hops: Hop[] = [];
        for (const [dev, n, onlink, weight] of g.hopSeed) {
          const list = GWS[dev]?.[f] ?? [];
          const h: Hop =
            onlink && v4
              ? { gateway: `192.0.2.${1 + (n % 3)}`, dev, weight, onlink: true }
              : { gateway: list[n % list.length] as string, dev, weight, onlink: false };
          if (seen.has(`${h.gateway} ${dev}`)) continue;
          seen.add(`${h.gateway} ${dev}`);
          hops.push(h);
        }
        r = hops.length < 2 ? { ...base, gateway: gws[0] as string } : { ...base, dev: "", hops };
        break;
      }
      case "nhid":
        r = { ...base, dev: "", nhid: 1 + (g.g % 4) };
        break;
      case "inet6":
        r = v4
          ? { ...base, gateway: GWS[g.dev]?.[6][0] as string }
          : { ...base, gateway: gws[0] as string };
        break;
      case "linkless":
        r = {
          ...base,
          dev: "",
          type: ["blackhole", "unreachable", "prohibit", "throw"][g.g % 4] as string,
        };
        break;
      default:
        r = { ...base, type: g.form, scope: v4 ? (g.form === "local" ? 254 : 253) : 0 };
    }
    if (v4 && g.tos) r.tos = g.tos;
    if (!v4 && g.from && r.nhid === undefined) r.from = g.from;
    const attrs: Attr[] = g.attrs.map((i) => ATTRS[f][i] as Attr);
    if (g.lock && attrs.some(([n]) => n === "advmss")) attrs.push(["lock", "advmss"]);
    const withExpires = attrs.map(
      ([n, v]): Attr => (n === "expires" ? [n, String(g.expires)] : [n, v]),
    );
    if (withExpires.length && r.type === "unicast")
      r.attrs = withExpires.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    return r;
  });

/** What validation lets through (validate-state-routes.ts): exact duplicates once, no IPv6 joins or link clashes. */
function valid(routes: readonly Route[]): Route[] {
  const out: Route[] = [];
  for (const r of routes) {
    const same = out.filter((o) => routeKey(o) === routeKey(r));
    if (same.some((o) => routeIdentity(o, true) === routeIdentity(r, true))) continue;
    if (r.family === 6) {
      if (same.some((o) => ecmpCapable(o) && ecmpCapable(r))) continue;
      // rt6_duplicate_nexthop: the same object, or the same link and gateway; types aside.
      const samePath = (o: Route) =>
        o.nhid !== undefined || r.nhid !== undefined
          ? o.nhid === r.nhid
          : o.dev === r.dev && o.gateway === r.gateway;
      if (same.some((o) => !ecmpCapable(o) && !ecmpCapable(r) && samePath(o))) continue;
    }
    out.push(r);
  }
  return out;
}

/** Whether a gateway-less link route of `table` reaches `gw` from `dev` (the sim's rule). */
function reaches(table: readonly Route[], gw: string, dev: string): boolean {
  const family = gw.includes(":") ? 6 : 4;
  return table.some(
    (c) =>
      c.family === family &&
      c.type === "unicast" &&
      !c.gateway &&
      !c.hops &&
      c.nhid === undefined &&
      c.dev === dev &&
      (family === 6 || c.scope === 253) &&
      contains(c.dst, gw),
  );
}

/**
 * Leaves out routes whose gateway nothing reaches any more (a replace
 * overwrote the link route): the kernel could not put those back either,
 * so no rollback could. To a fixpoint.
 */
function reachableOnly(routes: Route[]): Route[] {
  for (;;) {
    const kept = routes.filter((r) =>
      (r.hops ?? [r]).every((h) => !h.gateway || h.onlink || reaches(routes, h.gateway, h.dev)),
    );
    if (kept.length === routes.length) return kept;
    routes = kept;
  }
}

/**
 * Leaves out routes whose gateway only a route of their own key reaches:
 * IPv4 keeps routes of a key in order and the plan adds them in order, so
 * one listed before the route that makes it reachable would need `ip route
 * prepend` (not planned: refused by the kernel, the Apply fails whole).
 */
function ownKeyFree(routes: Route[]): Route[] {
  for (;;) {
    const kept = routes.filter((r) =>
      (r.hops ?? [r]).every(
        (h) =>
          !h.gateway ||
          h.onlink ||
          reaches(
            routes.filter((t) => routeKey(t) !== routeKey(r)),
            h.gateway,
            h.dev,
          ),
      ),
    );
    if (kept.length === routes.length) return kept;
    routes = kept;
  }
}

interface Scenario {
  current: Route[];
  desired: Route[];
}

/** Current: the kernel's routes and what earlier commands left (replace or append, refusals skipped). */
const arbScenario: fc.Arbitrary<Scenario> = fc
  .record({
    stale: fc.array(fc.tuple(arbRoute, fc.boolean()), { maxLength: 8 }),
    desired: fc.array(arbRoute, { maxLength: 10 }),
  })
  .map(({ stale, desired }) => {
    const sim = new RouteSim(KERNEL);
    for (const [r, append] of stale) {
      try {
        if (append) sim.append(r);
        else sim.replace(r);
      } catch {
        // refused by the kernel: never there
      }
    }
    return {
      current: ownKeyFree(reachableOnly(sim.routes)),
      desired: [...KERNEL, ...valid(desired)],
    };
  });

const ids = (routes: readonly Route[]) => routes.map((r) => routeIdentity(r, true)).sort();

/**
 * IPv4 routes of one key with two or more not made by the kernel (what
 * `ip route append` makes), all with a gateway or all without, in table
 * order: the kernel tries them in that order. (Of a key mixing the two
 * kinds the plan adds those without a gateway first: not compared.)
 */
function keyOrder(routes: readonly Route[]): string[] {
  const groups = new Map<string, Route[]>();
  for (const r of routes) {
    if (r.family !== 4) continue;
    groups.set(routeKey(r), [...(groups.get(routeKey(r)) ?? []), r]);
  }
  return [...groups.entries()]
    .filter(([, v]) => v.filter((r) => r.protocol !== "kernel").length > 1)
    .filter(([, v]) => new Set(v.map(hasGateway)).size === 1)
    .map(([k, v]) => `${k}: ${v.map((r) => routeIdentity(r, true)).join(" | ")}`)
    .sort();
}

const EXACT = { exact: true } as const;
const ROLLBACK = { exact: true, deletesFirst: true } as const;
const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS) || 500 };

describe("planRoutes over the route vocabulary (kernel model)", () => {
  it("applies without failure and yields the desired table, routes of one key in the desired order", () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const ops = planRoutes(s.current, s.desired, EXACT);
        const sim = simulate(s, s.current, ops);
        same(ids(sim.routes), ids(s.desired), () => explain(s, ops, sim));
        same(keyOrder(sim.routes), keyOrder(s.desired), () => explain(s, ops, sim));
      }),
      RUNS,
    );
  });

  it("is idempotent: planning again from the result gives no operations", () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const ops = planRoutes(s.current, s.desired, EXACT);
        const sim = simulate(s, s.current, ops);
        same(planRoutes(sim.routes, s.desired, EXACT), [], () => explain(s, ops, sim));
      }),
      RUNS,
    );
  });

  it("the rollback restores the table read before, from the end or from any point of the plan", () => {
    fc.assert(
      fc.property(arbScenario, fc.nat(), (s, cut) => {
        const ops = planRoutes(s.current, s.desired, EXACT);
        for (const n of [ops.length, cut % (ops.length + 1)]) {
          const half = simulate(s, s.current, ops.slice(0, n)).routes;
          const back = planRoutes(half, s.current, ROLLBACK);
          const sim = simulate(s, half, back);
          same(ids(sim.routes), ids(s.current), () => explain(s, back, sim));
          same(keyOrder(sim.routes), keyOrder(s.current), () => explain(s, back, sim));
        }
      }),
      RUNS,
    );
  });

  it("without exact: the desired routes plus the kernel's that none supersedes", () => {
    // An IPv4 local or anycast route sits beside a prefix route; any other takes its place.
    const beside = (r: Route) => r.family === 4 && ["local", "anycast"].includes(r.type);
    const expected = (desired: readonly Route[]) => {
      const dd = new Set(
        desired.filter((r) => !beside(r)).map((r) => `${r.family} ${r.dst} ${r.dev}`),
      );
      return [...KERNEL.filter((k) => !dd.has(`${k.family} ${k.dst} ${k.dev}`)), ...desired];
    };
    fc.assert(
      fc.property(arbScenario, (s) => {
        // A request whose gateways its own table cannot reach is refused by
        // the kernel: left out. So is one whose gateway only a route of its
        // own key reaches (one listed after it: IPv4 keeps them in order,
        // and the plan adds them in order; `prepend` would be needed).
        let desired = s.desired.filter((r) => r.protocol !== "kernel");
        for (;;) {
          const table = expected(desired);
          const want = reachableOnly(table);
          const kept = desired.filter(
            (r) =>
              want.includes(r) &&
              (r.hops ?? [r]).every(
                (h) =>
                  !h.gateway ||
                  h.onlink ||
                  reaches(
                    table.filter((t) => routeKey(t) !== routeKey(r)),
                    h.gateway,
                    h.dev,
                  ),
              ),
          );
          if (kept.length === desired.length) break;
          desired = kept;
        }
        const ops = planRoutes(s.current, desired, { kernel: KERNEL });
        const sim = simulate(s, s.current, ops);
        // Without exact the protocol is not compared: a route equal to one there but for it is in place.
        const loose = (routes: readonly Route[]) => [
          ...new Set(routes.map((r) => routeIdentity(r, false)).sort()),
        ];
        same(loose(sim.routes), loose(expected(desired)), () => explain(s, ops, sim));
        same(planRoutes(sim.routes, desired, { kernel: KERNEL }), [], () => explain(s, ops, sim));
      }),
      RUNS,
    );
  });
});
