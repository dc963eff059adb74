/**
 * The route and nexthop parsers on output recorded from a real netns
 * (iproute2 6.1, Linux 6.18; test/fixtures/ip/route-vocabulary.*,
 * nexthop*-show.json): multipath, nexthop objects, via inet6, tos (also
 * by its dsfield name), from, every metric with its lock, pref, realms,
 * expires, the route types in user tables; and what is not carried.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Route } from "../../src/net/model/model";
import { nexthopIds, parseNexthops } from "../../src/net/parse/parse-ip-nexthops";
import {
  addLocks,
  parseAllTableRoutes,
  routeKeysNotCarried,
} from "../../src/net/parse/parse-ip-routes";

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/ip/${name}`, import.meta.url), "utf8");

function read(): Route[] {
  const doc = JSON.parse(fixture("route-vocabulary.json"));
  expect(addLocks(doc, fixture("route-vocabulary.txt"))).toBe(true);
  return parseAllTableRoutes(doc);
}

const find = (routes: Route[], dst: string, table = 254) =>
  routes.filter((r) => r.dst === dst && r.table === table);

describe("parseAllTableRoutes: the route vocabulary", () => {
  const routes = read();

  it("a multipath route keeps every path (gateway, link, weight, onlink), and no link of its own", () => {
    const [d] = find(routes, "0.0.0.0/0");
    expect(d).toMatchObject({ family: 4, dev: "", onlink: false });
    expect(d?.gateway).toBeUndefined();
    expect(d?.hops).toEqual([
      { gateway: "10.70.119.193", dev: "eth0", weight: 1, onlink: false },
      { gateway: "10.70.119.195", dev: "eth0", weight: 3, onlink: false },
      { gateway: "10.80.0.1", dev: "eth1", weight: 1, onlink: true },
    ]);
    const [mixed] = find(routes, "10.20.0.0/16");
    expect(mixed?.hops?.map((h) => h.gateway)).toEqual(["fd00::1", "10.80.0.1"]);
  });

  it("tos is part of the route, as 0x04 or by its dsfield name (CS1 is 0x20)", () => {
    expect(find(routes, "100.64.0.0/12").map((r) => r.tos)).toEqual([0x20, 0x04]);
  });

  it("every metric, with the locks only the text dump shows", () => {
    const [r] = find(routes, "10.9.0.0/16");
    expect(r?.mtu).toBe(1400);
    expect(r?.attrs).toEqual([
      ["advmss", "1200"],
      ["congctl", "cubic"],
      ["cwnd", "4"],
      ["fastopen_no_cookie", "1"],
      ["features", "ecn"],
      ["hoplimit", "30"],
      ["initcwnd", "10"],
      ["initrwnd", "12"],
      ["lock", "congctl,mtu"],
      ["quickack", "1"],
      ["reordering", "5"],
      ["rto_min", "300ms"],
      ["rtt", "100ms"],
      ["rttvar", "20ms"],
      ["ssthresh", "5"],
      ["window", "3000"],
    ]);
  });

  it("a route by a nexthop object has its nhid and none of the object's gateway or link", () => {
    const [byGroup] = find(routes, "10.11.0.0/16");
    expect(byGroup).toMatchObject({ nhid: 7, dev: "", family: 4 });
    expect(byGroup?.hops).toBeUndefined();
    const [bySingle] = find(routes, "10.19.0.0/16");
    expect(bySingle).toMatchObject({ nhid: 5, dev: "" });
    expect(bySingle?.gateway).toBeUndefined();
    // The kernel shows a route by a blackhole object as a blackhole route.
    expect(find(routes, "10.30.0.0/16")[0]).toMatchObject({ nhid: 8, type: "blackhole", dev: "" });
    expect(find(routes, "2001:db8:5::/48", 100)[0]).toMatchObject({ nhid: 9, family: 6 });
  });

  it("IPv4 via an IPv6 gateway keeps the gateway", () => {
    expect(find(routes, "10.14.0.0/16")[0]).toMatchObject({ gateway: "fd00::1", dev: "eth0" });
  });

  it("realms, IPv6 from, pref and expires", () => {
    expect(find(routes, "10.15.0.0/16")[0]?.attrs).toEqual([["realms", "7"]]);
    expect(find(routes, "10.16.0.0/16")[0]?.attrs).toEqual([["realms", "3/7"]]);
    const [v6] = find(routes, "2001:db8::/48");
    expect(v6?.from).toBe("fd00::/64");
    expect(v6?.attrs?.map(([n]) => n)).toEqual(["expires", "pref"]);
    expect(v6?.attrs?.[1]).toEqual(["pref", "high"]);
    // pref medium is every IPv6 route's default: not an attribute.
    expect(find(routes, "fd00::/64")[0]?.attrs).toBeUndefined();
  });
});

describe("parseAllTableRoutes: appended routes, user tables, every key", () => {
  const routes = read();

  it("two routes ip route append made are two routes; IPv6 shows its appended one as a path", () => {
    expect(find(routes, "10.13.0.0/16").map((r) => r.gateway)).toEqual([
      "10.70.119.193",
      "10.70.119.195",
    ]);
    const v6 = find(routes, "2001:db8:1::/48");
    expect(v6).toHaveLength(1);
    expect(v6[0]?.hops?.map((h) => h.gateway)).toEqual(["fd00::1", "fd00::3"]);
  });

  it("local, broadcast, anycast, multicast and nat routes in user tables", () => {
    const types = (t: number) =>
      routes
        .filter((r) => r.table === t && r.protocol !== "kernel")
        .map((r) => `${r.type} ${r.dst} ${r.dev}`);
    expect(types(200)).toEqual(["local 10.12.0.0/16 eth0"]);
    expect(types(100)).toEqual(
      expect.arrayContaining([
        "broadcast 198.51.100.5/32 eth0",
        "anycast 10.17.0.0/16 eth0",
        "multicast 224.1.0.0/16 eth0",
        "nat 10.18.0.0/16 ",
        "multicast ff3e:0:1::/48 eth0",
        "local fd00:6::/64 eth0",
        // IPv6 files a route through no link under lo: it has none.
        "unreachable 2001:db8:dead::/48 ",
      ]),
    );
  });

  it("every key of the recorded routes is carried", () => {
    const doc = JSON.parse(fixture("route-vocabulary.json")) as Record<string, unknown>[];
    expect(doc.flatMap(routeKeysNotCarried)).toEqual([]);
    expect(
      routeKeysNotCarried({ dst: "default", encap: "mpls", metrics: [{ mtu: 1, x: 2 }] }),
    ).toEqual(["encap", "metrics.x"]);
    expect(routeKeysNotCarried({ dst: "default", flow: { to: "cosmos2" } })).toEqual(["flow"]);
  });

  it("addLocks refuses a text dump that does not line up with the JSON", () => {
    const doc = JSON.parse(fixture("route-vocabulary.json"));
    const text = fixture("route-vocabulary.txt").split("\n");
    expect(addLocks(doc, text.slice(1).join("\n"))).toBe(false);
    expect(addLocks(doc.slice(1), text.join("\n"))).toBe(false);
  });
});

describe("parseNexthops", () => {
  it("singles (gateway, link, onlink, protocol), a blackhole, groups with weights, a resilient group; the family from -6", () => {
    const v6 = nexthopIds(JSON.parse(fixture("nexthop6-show.json")));
    expect([...v6].sort((a, b) => a - b)).toEqual([9, 10]);
    const n = parseNexthops(JSON.parse(fixture("nexthop-show.json")), v6);
    expect(n).toEqual([
      {
        id: 5,
        family: 4,
        gateway: "10.70.119.193",
        dev: "eth0",
        onlink: false,
        blackhole: false,
        protocol: "unspec",
      },
      {
        id: 6,
        family: 4,
        gateway: "10.80.0.1",
        dev: "eth1",
        onlink: true,
        blackhole: false,
        protocol: "unspec",
      },
      {
        id: 7,
        family: 0,
        dev: "",
        onlink: false,
        blackhole: false,
        group: [
          { id: 5, weight: 2 },
          { id: 6, weight: 1 },
        ],
        protocol: "unspec",
      },
      { id: 8, family: 4, dev: "", onlink: false, blackhole: true, protocol: "unspec" },
      {
        id: 9,
        family: 6,
        gateway: "fd00::1",
        dev: "eth0",
        onlink: false,
        blackhole: false,
        protocol: "unspec",
      },
      { id: 10, family: 6, dev: "eth0", onlink: false, blackhole: false, protocol: "unspec" },
      { id: 11, family: 4, dev: "eth1", onlink: false, blackhole: false, protocol: "static" },
      {
        id: 12,
        family: 0,
        dev: "",
        onlink: false,
        blackhole: false,
        group: [
          { id: 5, weight: 1 },
          { id: 6, weight: 1 },
        ],
        protocol: "unspec",
        attrs: [
          ["buckets", "8"],
          ["idle_timer", "60"],
          ["type", "resilient"],
        ],
      },
    ]);
  });
});
