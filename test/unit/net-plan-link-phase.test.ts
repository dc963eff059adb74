/**
 * planApply's prediction of what link lines do to routes and neighbours
 * (plan-link-phase.ts), where the kernel acts by itself: an MTU below 1280
 * takes IPv6 off the link at once (checked in a netns: every IPv6 route
 * through it, in every table, and its IPv6 addresses go with the `mtu` line).
 */
import { describe, expect, it } from "vitest";
import type { FullState } from "../../src/net/model/full-state";
import type { Address, Link, Neighbor, Route } from "../../src/net/model/model";
import { planApply } from "../../src/net/plan/plan-apply";
import { planLinkPhase, predictRoutes } from "../../src/net/plan/plan-link-phase";

const MAC = "02:00:00:00:00:01";

const addr = (family: 4 | 6, cidr: string, scope = "global"): Address => {
  const [address = "", prefix = ""] = cidr.split("/");
  return { family, address, prefix: Number(prefix), scope };
};

const eth0: Link = {
  index: 2,
  name: "eth0",
  mac: MAC,
  mtu: 1500,
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  kind: "veth",
  addresses: [
    addr(4, "10.1.0.2/24"),
    addr(6, "fd00::2/64"),
    addr(6, "fe80::1:2ff:fe00:1/64", "link"),
  ],
};

const route = (over: Partial<Route>): Route => ({
  family: 6,
  table: 254,
  dst: "::/0",
  dev: "eth0",
  scope: 0,
  metric: 1024,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
  ...over,
});

const routes: Route[] = [
  route({
    family: 4,
    dst: "10.1.0.0/24",
    prefsrc: "10.1.0.2",
    scope: 253,
    metric: 0,
    protocol: "kernel",
  }),
  route({ dst: "fd00::/64", metric: 256, protocol: "kernel" }),
  route({ dst: "fe80::/64", metric: 256, protocol: "kernel" }),
  route({ dst: "fd01::/64", gateway: "fd00::1", table: 100 }),
];

const neighbor: Neighbor = {
  family: 6,
  ip: "fd00::1",
  dev: "eth0",
  lladdr: "02:00:00:00:00:09",
  state: ["PERMANENT"],
  router: false,
};

const current: FullState = {
  links: [eth0],
  routes,
  rules: [],
  neighbors: [neighbor],
  sysctls: new Map(),
};

const want = (mtu: number) => ({
  mac: MAC,
  name: "",
  mtu,
  noarp: false,
  up: true,
  addresses: [{ family: 4 as const, address: "10.1.0.2", prefix: 24 }],
});

describe("planLinkPhase: an MTU below 1280", () => {
  it("predicts every IPv6 route of the link gone (every table), its IPv6 addresses too", () => {
    const phase = planLinkPhase([eth0], [want(1200)]);
    expect(phase.ipv6Off).toEqual(new Set(["eth0"]));
    expect(phase.predicted[0]?.addresses.filter((a) => a.family === 6)).toEqual([]);
    expect(predictRoutes(routes, [eth0], phase).map((r) => r.dst)).toEqual(["10.1.0.0/24"]);
  });

  it("plans no delete of what the kernel takes itself (routes, permanent IPv6 neighbours)", () => {
    const plan = planApply(
      current,
      {
        links: [want(1200)],
        routes: [routes[0] as Route],
        rules: [],
        neighbors: [],
        sysctls: [],
        nexthops: [],
      },
      { exact: true },
    );
    expect(plan.batch).toContain("link set dev eth0 mtu 1200");
    // (The address goes before the MTU line, while `addr del` can find it.)
    const v6 = plan.batch.filter((l) => /^(route|neigh) /.test(l) && l.includes(":"));
    expect(v6).toEqual([]);
  });

  it("at 1280 the link keeps IPv6: the same plan deletes the routes and neighbour", () => {
    const plan = planApply(
      current,
      {
        links: [want(1280)],
        routes: [routes[0] as Route],
        rules: [],
        neighbors: [],
        sysctls: [],
        nexthops: [],
      },
      { exact: true },
    );
    expect(plan.links.ipv6Off).toEqual(new Set());
    expect(plan.batch.some((l) => l.startsWith("route del fd01::/64"))).toBe(true);
    expect(plan.batch).toContain("neigh del fd00::1 dev eth0");
  });
});
