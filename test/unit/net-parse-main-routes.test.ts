/**
 * The `ip -json` route parser against main tables recorded from iproute2
 * 6.1 in a throwaway netns (test/fixtures/ip/*.out): routes with onlink,
 * mtu, scope link, src, proto static + metric, unreachable, blackhole,
 * IPv6 default; held to impliedKernelRoutes; and the listing of every
 * table read without a family.
 */

import { describe, expect, it } from "vitest";
import { type Route, routeIdentity } from "../../src/net/model/model";
import { parseLinks, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { one } from "../helpers/ip-fixtures";

const base = { scope: 0, metric: 0, onlink: false, mtu: 0, protocol: "boot", type: "unicast" };

describe("parseRoutes (route-show-main.out, route6-show-main.out)", () => {
  const v4 = parseRoutes(one("route-show-main.out"), 4);
  const v6 = parseRoutes(one("route6-show-main.out"), 6);

  it("reads the IPv4 main table (default, onlink, mtu, static metric, PTP, /32 scope link, kernel, blackhole, unreachable)", () => {
    expect(v4).toEqual([
      { ...base, family: 4, dst: "0.0.0.0/0", gateway: "10.248.246.145", dev: "eth0" },
      { ...base, family: 4, dst: "10.9.0.0/16", gateway: "169.254.1.1", dev: "eth1", onlink: true },
      { ...base, family: 4, dst: "10.10.0.0/16", gateway: "192.168.1.1", dev: "eth1", mtu: 1400 },
      {
        ...base,
        family: 4,
        dst: "10.11.0.0/16",
        dev: "eth1",
        scope: 253,
        metric: 100,
        protocol: "static",
      },
      // The PTP route: `replace` overwrote the kernel's subnet route (same key).
      {
        ...base,
        family: 4,
        dst: "10.248.246.144/28",
        gateway: "10.248.246.145",
        dev: "eth0",
        prefsrc: "10.248.246.146",
      },
      // ip prints a host route without "/32".
      {
        ...base,
        family: 4,
        dst: "10.248.246.145/32",
        dev: "eth0",
        prefsrc: "10.248.246.146",
        scope: 253,
      },
      {
        ...base,
        family: 4,
        dst: "192.168.1.0/24",
        dev: "eth1",
        prefsrc: "192.168.1.5",
        scope: 253,
        protocol: "kernel",
      },
      { ...base, family: 4, dst: "198.51.100.0/24", dev: "", type: "blackhole" },
      { ...base, family: 4, dst: "203.0.113.0/24", dev: "", type: "unreachable" },
    ]);
  });

  it("reads the IPv6 main table (kernel metric 256, link-local per link, mtu, unreachable on lo, default)", () => {
    const k = { ...base, family: 6, metric: 256, protocol: "kernel" };
    expect(v6).toEqual([
      { ...k, dst: "2001:db8::/64", dev: "eth0" },
      {
        ...base,
        family: 6,
        dst: "2001:db8:5::/48",
        gateway: "fe80::1",
        dev: "eth1",
        metric: 1024,
        mtu: 1300,
      },
      // The kernel puts IPv6 unreachable routes on lo.
      {
        ...base,
        family: 6,
        dst: "2001:db8:dead::/48",
        dev: "lo",
        metric: 1024,
        type: "unreachable",
      },
      { ...k, dst: "fd00:1::/64", dev: "eth1" },
      { ...k, dst: "fe80::/64", dev: "eth0" },
      { ...k, dst: "fe80::/64", dev: "peer0" },
      { ...k, dst: "fe80::/64", dev: "eth1" },
      { ...k, dst: "fe80::/64", dev: "peer1" },
      { ...base, family: 6, dst: "::/0", gateway: "2001:db8::1", dev: "eth0", metric: 1024 },
    ]);
  });

  it("agrees with impliedKernelRoutes: every recorded kernel route is implied, and vice versa but the one PTP replaced", () => {
    const implied = impliedKernelRoutes(parseLinks(one("addr-show.out")));
    const id = (r: Route) => routeIdentity(r, true);
    const recorded = [...v4, ...v6].filter((r) => r.protocol === "kernel").map(id);
    expect(implied.map(id).sort()).toEqual(
      [
        ...recorded,
        id({
          ...base,
          family: 4,
          dst: "10.248.246.144/28",
          dev: "eth0",
          prefsrc: "10.248.246.146",
          scope: 253,
          protocol: "kernel",
        }),
      ].sort(),
    );
  });
});

describe("parseRoutes: host bits, names, what it skips, multipath", () => {
  it("masks host bits, maps scope names and numbers, keeps unknown protocols as text", () => {
    const routes = parseRoutes(
      [
        { dst: "10.1.2.3/8", dev: "a", scope: "host", protocol: 42 },
        { dst: "2001:db8::1/32", dev: "a", scope: "253", metric: 5 },
        { dst: "10.0.0.0/8", dev: "a", scope: "site" },
        { dst: "10.0.0.0/8", dev: "a", scope: "weird" },
      ],
      4,
    );
    expect(routes.map((r) => [r.dst, r.scope, r.protocol, r.metric])).toEqual([
      ["10.0.0.0/8", 254, "42", 0],
      ["2001:db8::/32", 253, "boot", 5],
      ["10.0.0.0/8", 200, "boot", 0],
      ["10.0.0.0/8", 0, "boot", 0],
    ]);
  });

  it("skips other tables, unparseable destinations and entries without dst", () => {
    expect(
      parseRoutes(
        [
          { dst: "10.0.0.0/8", dev: "a", table: "local" },
          { dst: "10.0.0.0/8", dev: "a", table: "main" },
          { dst: "nonsense", dev: "a" },
          { dev: "a" },
          "junk",
        ],
        4,
      ).map((r) => r.dst),
    ).toEqual(["10.0.0.0/8"]);
  });

  it("takes a multipath route's device from its first hop and drops a gateway of the other family", () => {
    const [mp, v4via6] = parseRoutes(
      [
        {
          dst: "10.0.0.0/8",
          nexthops: [
            { gateway: "192.0.2.1", dev: "eth3" },
            { gateway: "192.0.2.2", dev: "eth4" },
          ],
        },
        { dst: "10.1.0.0/16", gateway: "fe80::1", dev: "eth0" },
      ],
      4,
    );
    expect(mp?.dev).toBe("eth3");
    expect(v4via6?.gateway).toBeUndefined();
  });
});

describe("parseRoutes without a family (route show table all)", () => {
  it("infers each route's family and keeps only the main table", () => {
    const doc = [
      {
        type: "unicast",
        dst: "default",
        dev: "a0",
        table: "main",
        protocol: "boot",
        scope: "link",
        flags: [],
      },
      {
        type: "local",
        dst: "10.0.0.2",
        dev: "a0",
        table: "local",
        protocol: "kernel",
        scope: "host",
        prefsrc: "10.0.0.2",
        flags: [],
      },
      {
        type: "unicast",
        dst: "default",
        dev: "a0",
        table: "main",
        protocol: "boot",
        scope: "global",
        metric: 1024,
        flags: [],
        pref: "medium",
      },
      {
        type: "unicast",
        dst: "default",
        gateway: "fe80::1",
        dev: "a0",
        table: "main",
        metric: 1024,
        flags: [],
      },
      {
        type: "unicast",
        dst: "10.0.0.0/24",
        dev: "a0",
        table: "main",
        prefsrc: "10.0.0.2",
        protocol: "kernel",
        scope: "link",
        flags: [],
      },
      {
        type: "unreachable",
        dst: "2001:db8::/32",
        dev: "lo",
        table: "main",
        metric: 1024,
        flags: [],
        pref: "medium",
      },
    ];
    expect(parseRoutes(doc).map((r) => `${r.family} ${r.dst} ${r.dev}`)).toEqual([
      "4 0.0.0.0/0 a0",
      "6 ::/0 a0",
      "6 ::/0 a0",
      "4 10.0.0.0/24 a0",
      "6 2001:db8::/32 lo",
    ]);
  });

  it("reads the recorded listing like the two per-family ones", () => {
    expect(parseRoutes(one("route-show-all.out"))).toEqual([
      ...parseRoutes(one("route-show-main.out"), 4),
      ...parseRoutes(one("route6-show-main.out"), 6),
    ]);
  });
});
