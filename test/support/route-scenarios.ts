/**
 * Random route scenarios for planRoutes' property tests: a few links with
 * addresses, the kernel's prefix routes for them, a current table made by
 * a boot script or an earlier agent (over the kernel model,
 * test/support/route-sim.ts) and a desired table a validator lets through,
 * whose gateways the final table can reach.
 */
import fc from "fast-check";
import { type Link, type Route, routeIdentity, routeKey } from "../../src/net/model/model";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { SCOPE_LINK } from "../../src/net/vocabulary/routes";
import { contains, RouteSim } from "./route-sim";

const LINKS = ["eth0", "eth1", "eth2"] as const;

const V4_ADDRS = [
  "10.0.0.2/24",
  "10.0.0.3/24",
  "10.0.1.2/24",
  "10.1.0.2/16",
  "10.1.3.4/16",
  "192.168.5.2/28",
  "172.16.0.1/32",
];
const V6_ADDRS = ["2001:db8:1::2/64", "2001:db8:1::3/64", "2001:db8:2::2/64", "fd00::2/48"];

const V4_DSTS = [
  "0.0.0.0/0",
  "10.0.0.0/24",
  "10.0.1.0/24",
  "10.1.0.0/16",
  "10.0.0.1/32",
  "10.0.1.1/32",
  "10.1.0.1/32",
  "192.168.5.0/28",
  "10.9.0.0/16",
];
const V4_GWS = ["10.0.0.1", "10.0.1.1", "10.1.0.1", "192.168.5.1", "169.254.1.1"];
const V6_DSTS = [
  "::/0",
  "2001:db8:1::/64",
  "2001:db8:2::/64",
  "2001:db8:1::1/128",
  "2001:db8:9::/48",
  "fd00::/48",
];
const V6_GWS = ["2001:db8:1::1", "2001:db8:2::1", "fe80::1", "fd00::1"];

const arbLinks: fc.Arbitrary<Link[]> = fc
  .tuple(
    fc.integer({ min: 1, max: 3 }),
    ...LINKS.map(() => fc.subarray(V4_ADDRS, { maxLength: 3 })),
    ...LINKS.map(() => fc.subarray(V6_ADDRS, { maxLength: 2 })),
  )
  .map(([n, ...lists]) =>
    LINKS.slice(0, n).map((name, i) => ({
      index: i + 2,
      name,
      mac: `02:00:00:00:00:0${i}`,
      mtu: 1500,
      flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
      kind: "veth",
      addresses: [
        ...(lists[i] ?? []).map((a) => addr(4, a)),
        ...(lists[i + LINKS.length] ?? []).map((a) => addr(6, a)),
        addr(6, `fe80::${i + 2}/64`, "link"),
      ],
    })),
  );

function addr(family: 4 | 6, cidr: string, scope = "global") {
  const [address = "", prefix = ""] = cidr.split("/");
  return { family, address, prefix: Number(prefix), scope };
}

/** A route as a request (or an earlier agent, or a boot script) would make it. */
function arbRoute(links: readonly Link[], kind: "desired" | "stale"): fc.Arbitrary<Route> {
  const devs = links.map((l) => l.name);
  const srcs = (family: 4 | 6) =>
    links.flatMap((l) =>
      l.addresses.filter((a) => a.family === family && a.scope === "global").map((a) => a.address),
    );
  return fc
    .record({
      family: fc.constantFrom<4 | 6>(4, 6),
      dst: fc.nat(),
      gw: fc.option(fc.nat(), { freq: 2 }),
      dev: fc.constantFrom(...devs),
      src: fc.option(fc.nat(), { freq: 3 }),
      scopeLink: fc.boolean(),
      onlink: fc.boolean(),
      mtu: fc.constantFrom(0, 0, 1400),
      metric: fc.constantFrom(0, 100, 256, 1024),
      protocol: fc.constantFrom("boot", "static"),
    })
    .map((g) => {
      const v4 = g.family === 4;
      const dsts = v4 ? V4_DSTS : V6_DSTS;
      const gws = v4 ? V4_GWS : V6_GWS;
      const gateway = g.gw === null ? undefined : gws[g.gw % gws.length];
      const sources = srcs(g.family);
      const prefsrc =
        g.src === null || sources.length === 0 ? undefined : sources[g.src % sources.length];
      return {
        family: g.family,
        dst: dsts[g.dst % dsts.length] as string,
        ...(gateway ? { gateway } : {}),
        dev: g.dev,
        ...(prefsrc ? { prefsrc } : {}),
        scope: v4 && !gateway && g.scopeLink ? SCOPE_LINK : 0,
        metric: kind === "desired" ? (v4 ? 0 : 1024) : v4 ? g.metric % 256 : g.metric || 1024,
        onlink: gateway !== undefined && g.onlink && g.gw !== null && g.gw % 3 === 0,
        mtu: g.mtu,
        protocol: kind === "desired" ? "boot" : g.protocol,
        type: "unicast",
      } satisfies Route;
    });
}

/** What validateRoutes lets through: one route per key (exact duplicates once, clashes dropped here). */
function dedupe(routes: readonly Route[]): Route[] {
  const byKey = new Map<string, Route>();
  const clashing = new Set<string>();
  for (const r of routes) {
    const k = routeKey(r);
    const twin = byKey.get(k);
    if (!twin) byKey.set(k, r);
    else if (JSON.stringify(twin) !== JSON.stringify(r)) clashing.add(k);
  }
  return [...byKey.values()].filter((r) => !clashing.has(routeKey(r)));
}

const dstDev = (r: Route) => `${r.family} ${r.dst} ${r.dev}`;

/**
 * The table UpdateRoutes must end with: desired plus the kernel routes none
 * supersedes (same destination on the same link; a twin on another link stays).
 */
export function expectedTable(desired: readonly Route[], kernel: readonly Route[]): Route[] {
  const dds = new Set(desired.map(dstDev));
  return [...kernel.filter((k) => !dds.has(dstDev(k))), ...desired];
}

/** A gateway-less route of `table` that makes r's gateway reachable (the sim's rule). */
function reachable(r: Route, table: readonly Route[]): boolean {
  if (!r.gateway || r.onlink) return true;
  const gw = r.gateway;
  return table.some(
    (c) =>
      c !== r &&
      c.family === r.family &&
      !c.gateway &&
      c.dev === r.dev &&
      (r.family === 6 || c.scope === SCOPE_LINK) &&
      contains(c.dst, gw),
  );
}

/** Keeps only desired gateway routes whose gateway the final table can reach: a valid request. */
function feasible(desired: Route[], kernel: readonly Route[], current: readonly Route[]): Route[] {
  // Dropping a route changes what the others may rely on: to a fixpoint.
  for (;;) {
    const kept = feasibleOnce(desired, kernel, current);
    if (kept.length === desired.length) return kept;
    desired = kept;
  }
}

function feasibleOnce(
  desired: readonly Route[],
  kernel: readonly Route[],
  current: readonly Route[],
): Route[] {
  const final = expectedTable(desired, kernel);
  // A link route a requested gateway route overwrites (PTP's subnet route)
  // still reaches gateways until then: for the route itself, and for the
  // gateway routes that overwrite nothing (the plan puts them first). Two
  // overwriting routes that need each other's victim have no order at all.
  const linkRoutes = (key: string) => current.filter((c) => !c.gateway && routeKey(c) === key);
  const keys = new Set(desired.filter((d) => d.gateway).map(routeKey));
  const victims = current.filter((c) => !c.gateway && keys.has(routeKey(c)));
  return desired.filter((r) => {
    const own = linkRoutes(routeKey(r));
    return reachable(r, [...final, ...(own.length > 0 ? own : victims)]);
  });
}

export interface Scenario {
  links: Link[];
  kernel: Route[];
  current: Route[];
  desired: Route[];
}

/**
 * Current: the kernel's prefix routes for the links' addresses (some
 * deleted by an earlier call), then stale routes replaced over them by a
 * boot script or an earlier agent (what the kernel refused is left out),
 * then routes whose gateway became unreachable are dropped (the kernel
 * could not put those back either, so no rollback could).
 */
export const arbScenario: fc.Arbitrary<Scenario> = arbLinks.chain((links) => {
  const kernel = impliedKernelRoutes(links);
  return fc
    .record({
      dropKernel: fc.subarray(kernel),
      stale: fc.array(arbRoute(links, "stale"), { maxLength: 8 }),
      desired: fc.array(arbRoute(links, "desired"), { maxLength: 10 }),
    })
    .map(({ dropKernel, stale, desired }) => {
      const sim = new RouteSim(kernel.filter((k) => !dropKernel.includes(k)));
      for (const r of stale) {
        try {
          sim.replace(r);
        } catch {
          // refused by the kernel: never there
        }
      }
      // IPv6 `replace` can leave two routes with the same key, link and
      // gateway (it overwrites a twin on another link); nothing but that
      // quirk makes such a table, and no plan could rebuild it: left out.
      const seen = new Set<string>();
      const current = sim.routes.filter((r) => {
        const twin = `${routeKey(r)} ${r.dev} ${r.gateway ?? ""}`;
        if (r.family === 6 && seen.has(twin)) return false;
        seen.add(twin);
        return reachable(r, sim.routes);
      });
      return { links, kernel, current, desired: feasible(dedupe(desired), kernel, current) };
    });
});

export const ids = (routes: readonly Route[], withProtocol = false) =>
  routes.map((r) => routeIdentity(r, withProtocol)).sort();

/** What the agent's rollback plans with (src/agent/apply/apply-routes.ts). */
export const ROLLBACK = { exact: true, deletesFirst: true } as const;

// PROPERTY_RUNS=5000 for a longer hunt.
export const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS) || 300 };
