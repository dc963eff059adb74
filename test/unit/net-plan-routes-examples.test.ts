/**
 * planRoutes: examples from the design (PTP, dual stack, stale removal,
 * one subnet on two links, device-less routes, exact mode), each checked
 * in the kernel model (test/support/route-sim.ts).
 */
import { describe, expect, it } from "vitest";
import type { Route } from "../../src/net/model/model";
import { planRoutes, type RouteOp } from "../../src/net/plan/routes/plan-routes";
import { SCOPE_LINK } from "../../src/net/vocabulary/routes";
import { ids, ROLLBACK } from "../support/route-scenarios";
import { RouteSim } from "../support/route-sim";

const R = (over: Partial<Route> & Pick<Route, "dst" | "dev">): Route => ({
  family: 4,
  scope: 0,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
  ...over,
});
const K4 = (dst: string, dev: string, prefsrc: string) =>
  R({ dst, dev, prefsrc, scope: SCOPE_LINK, protocol: "kernel" });
const K6 = (dst: string, dev: string) =>
  R({ family: 6, dst, dev, metric: 256, protocol: "kernel" });
const opLine = (o: RouteOp) => `${o.op} ${o.route.dst} ${o.route.dev}`;

describe("planRoutes examples", () => {
  it("PTP: the subnet route via the gateway replaces the kernel's, the /32 to the gateway goes first", () => {
    const kernel = [K4("10.248.246.144/28", "eth0", "10.248.246.146")];
    const desired = [
      R({ dst: "0.0.0.0/0", gateway: "10.248.246.145", dev: "eth0" }),
      R({
        dst: "10.248.246.144/28",
        gateway: "10.248.246.145",
        dev: "eth0",
        prefsrc: "10.248.246.146",
      }),
      R({ dst: "10.248.246.145/32", dev: "eth0", prefsrc: "10.248.246.146", scope: SCOPE_LINK }),
    ];
    const ops = planRoutes(kernel, desired, { kernel });
    expect(ops.map(opLine)).toEqual([
      "replace 10.248.246.145/32 eth0",
      "replace 0.0.0.0/0 eth0",
      "replace 10.248.246.144/28 eth0",
    ]);
    expect(ids(new RouteSim(kernel).applyAll(ops).routes)).toEqual(ids(desired));
  });

  it("a gateway route that overwrites a link route goes after the gateway routes that need it", () => {
    const kernel = [K4("10.0.0.0/24", "eth0", "10.0.0.2")];
    const desired = [
      R({ dst: "10.0.0.0/24", gateway: "10.0.0.1", dev: "eth0" }),
      // 10.0.0.5 is reachable only through the kernel's /24, until it is overwritten.
      R({ dst: "0.0.0.0/0", gateway: "10.0.0.5", dev: "eth0" }),
    ];
    const ops = planRoutes(kernel, desired, { kernel });
    expect(ops.map(opLine)).toEqual(["replace 0.0.0.0/0 eth0", "replace 10.0.0.0/24 eth0"]);
    expect(ids(new RouteSim(kernel).applyAll(ops).routes)).toEqual(ids(desired));
  });

  it("an IPv4 gateway route goes in before the anycast, multicast and broadcast routes of its table", () => {
    // The kernel checks a gateway by a lookup in the route's own table (link
    // scope and up): one of these types there that covers the gateway fails
    // the check ("Nexthop has invalid gateway"), a unicast or local one
    // passes it, and none at all sends it on to the other tables. Real
    // kernel: test/host/sync-route-vocabulary.test.ts.
    const T = 253;
    const desired = [
      R({ dst: "0.0.0.0/0", dev: "eth0", type: "anycast", scope: SCOPE_LINK, table: T }),
      R({ dst: "10.72.0.0/16", tos: 0xb8, gateway: "10.125.16.1", dev: "eth0", table: T }),
      R({ dst: "239.61.93.0/24", dev: "eth0", type: "multicast", scope: SCOPE_LINK, table: T }),
      R({ dst: "10.9.0.0/16", dev: "eth0", scope: SCOPE_LINK, table: T }),
      R({ dst: "198.51.100.7/32", dev: "eth0", type: "broadcast", scope: SCOPE_LINK, table: T }),
    ];
    const ops = planRoutes([], desired);
    expect(ops.map((o) => `${o.op} ${o.route.type} ${o.route.dst}`)).toEqual([
      "replace unicast 10.9.0.0/16",
      "replace unicast 10.72.0.0/16",
      "replace anycast 0.0.0.0/0",
      "replace multicast 239.61.93.0/24",
      "replace broadcast 198.51.100.7/32",
    ]);
  });

  it("IPv6 PTP: the kernel prefix route (metric 256) is deleted after the requested one (1024) is in", () => {
    const kernel = [K6("2001:db8::/64", "eth0"), K6("fe80::/64", "eth0")];
    const desired = [
      R({ family: 6, dst: "2001:db8::/64", gateway: "fe80::1", dev: "eth0", metric: 1024 }),
      R({ family: 6, dst: "::/0", gateway: "fe80::1", dev: "eth0", metric: 1024 }),
    ];
    const ops = planRoutes(kernel, desired, { kernel });
    expect(ops.map((o) => `${opLine(o)} ${o.op === "delete" ? o.reason : ""}`)).toEqual([
      "replace 2001:db8::/64 eth0 ",
      "replace ::/0 eth0 ",
      "delete 2001:db8::/64 eth0 superseded",
    ]);
    expect(ids(new RouteSim(kernel).applyAll(ops).routes)).toEqual(
      ids([K6("fe80::/64", "eth0"), ...desired]),
    );
  });

  it("deletes stale routes last, keeps lo's routes and kernel routes nobody asked about", () => {
    const lo = R({
      family: 6,
      dst: "2001:db8:dead::/48",
      dev: "lo",
      metric: 1024,
      type: "unreachable",
    });
    const k = K4("10.0.0.0/24", "eth0", "10.0.0.2");
    const stale = R({ dst: "10.9.0.0/16", gateway: "10.0.0.1", dev: "eth0", protocol: "static" });
    const want = R({ dst: "0.0.0.0/0", gateway: "10.0.0.1", dev: "eth0" });
    const ops = planRoutes([k, stale, lo], [want], { kernel: [k] });
    expect(ops.map(opLine)).toEqual(["replace 0.0.0.0/0 eth0", "delete 10.9.0.0/16 eth0"]);
  });
});

describe("planRoutes examples: one subnet on two links, device-less routes, exact mode", () => {
  it("same subnet on two links: the request supersedes its own link's kernel route only", () => {
    const k0 = K4("10.0.0.0/24", "eth0", "10.0.0.2");
    const k1 = K4("10.0.0.0/24", "eth1", "10.0.0.3");
    const desired = [
      R({ dst: "10.0.0.1/32", dev: "eth1", scope: SCOPE_LINK }),
      R({ dst: "10.0.0.0/24", gateway: "10.0.0.1", dev: "eth1" }),
    ];
    const ops = planRoutes([k0, k1], desired, { kernel: [k0, k1] });
    // eth0's route holds the key and stays: `replace` would overwrite it (the
    // first with the key), so the request is appended and eth1's twin deleted by name.
    expect(ops.map(opLine)).toEqual([
      "replace 10.0.0.1/32 eth1",
      "append 10.0.0.0/24 eth1",
      "delete 10.0.0.0/24 eth1",
    ]);
    expect(ids(new RouteSim([k0, k1]).applyAll(ops).routes).sort()).toEqual(
      ids([k0, ...desired]).sort(),
    );
  });

  it("a request on one link leaves another link's kernel route with the same key alone", () => {
    const k0 = K4("10.0.0.0/24", "eth0", "10.0.0.2");
    const k1 = K4("192.0.2.0/24", "eth1", "192.0.2.2");
    const want = R({ dst: "10.0.0.0/24", gateway: "192.0.2.1", dev: "eth1" });
    const ops = planRoutes([k0, k1], [want], { kernel: [k0, k1] });
    expect(ops.map(opLine)).toEqual(["append 10.0.0.0/24 eth1"]);
    expect(ids(new RouteSim([k0, k1]).applyAll(ops).routes).sort()).toEqual(
      ids([k0, k1, want]).sort(),
    );
  });

  it("a missing kernel route whose key another link holds comes back with append, not replace", () => {
    const k0 = K6("fe80::/64", "eth0");
    const k1 = K6("fe80::/64", "eth1");
    const ops = planRoutes([k0], [], { kernel: [k0, k1] });
    expect(ops).toEqual([{ op: "append", route: k1 }]);
    expect(ids(new RouteSim([k0]).applyAll(ops).routes)).toEqual(ids([k0, k1]));
  });

  it("keeps device-less routes of both families (a request cannot name them: every route needs a link)", () => {
    const bh4 = R({ dst: "198.51.100.0/24", dev: "", type: "blackhole" });
    const bh6 = R({
      family: 6,
      dst: "2001:db8:dead::/48",
      dev: "lo",
      metric: 1024,
      type: "blackhole",
    });
    const want = R({ dst: "0.0.0.0/0", gateway: "10.0.0.1", dev: "eth0" });
    const k = K4("10.0.0.0/24", "eth0", "10.0.0.2");
    const kata = { kernel: [k], keepLinkless: true };
    expect(planRoutes([k, bh4, bh6], [want], kata).map(opLine)).toEqual(["replace 0.0.0.0/0 eth0"]);
    expect(planRoutes([k, bh4, bh6, want], [], kata).map(opLine)).toEqual([
      "delete 0.0.0.0/0 eth0",
    ]);
    // Without the option (the whole-state Apply, which names route types), they are planned.
    expect(planRoutes([k, bh4], [], { kernel: [k] }).map(opLine)).toEqual([
      "delete 198.51.100.0/24 ",
    ]);
  });

  it("exact mode compares protocol and removes kernel routes not listed", () => {
    const k = K4("10.0.0.0/24", "eth0", "10.0.0.2");
    const boot = { ...k, protocol: "boot" };
    expect(planRoutes([k], [boot], { exact: true }).map((o) => o.op)).toEqual(["replace"]);
    // A rollback deletes what it does not keep first, then adds.
    expect(planRoutes([k], [boot], ROLLBACK).map((o) => o.op)).toEqual(["delete", "replace"]);
    expect(planRoutes([k], [], { exact: true }).map((o) => o.op)).toEqual(["delete"]);
    expect(planRoutes([k], [boot])).toEqual([]);
  });
});
