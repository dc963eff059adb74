/** batchLine's token guard and the `ip -batch` text of route operations, table-driven. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Route } from "../../src/net/model/model";
import {
  batchLine,
  renderNexthopDelete,
  renderNexthopReplace,
  renderRouteDelete,
  renderRouteOps,
  renderRouteReplace,
  UnsafeTokenError,
} from "../../src/net/plan/render-batch";
import { route as r } from "../support/routes";

describe("batchLine", () => {
  it("joins plain tokens and numbers with single spaces", () => {
    expect(batchLine(["route", "replace", "10.0.0.0/8", "via", "fe80::1", "metric", 0])).toBe(
      "route replace 10.0.0.0/8 via fe80::1 metric 0",
    );
    expect(batchLine(["link", "set", "dev", "eth0.100", "name", "a_b-c@d+e=f"])).toBe(
      "link set dev eth0.100 name a_b-c@d+e=f",
    );
  });

  it.each([
    ["a newline (a second command)", "eth0\nroute flush table main"],
    ["a carriage return", "eth0\r"],
    ["a space (a second token)", "eth0 down"],
    ["a tab", "eth0\tx"],
    ["'#' (a comment)", "#eth0"],
    ["'#' inside", "eth#0"],
    ["a double quote", 'eth"0'],
    ["a single quote", "eth'0"],
    ["a backslash", "eth\\0"],
    ["a leading '-' (an option)", "-force"],
    ["a lone '-'", "-"],
    ["a negative number", -1],
    ["NUL", "eth\u00000"],
    ["unicode letters", "éth0"],
    ["a unicode space", "eth\u00a00"],
    ["an emoji", "eth😀"],
    ["the empty string", ""],
    ["';'", "eth0;reboot"],
    ["'$'", "$(reboot)"],
  ])("refuses %s", (_what, token) => {
    expect(() => batchLine(["link", "set", "dev", token])).toThrow(UnsafeTokenError);
  });

  it("names the refused value in the error", () => {
    expect(() => batchLine(["a\nb"])).toThrow('refusing to pass "a\\nb" to ip');
  });

  // The guard as it was written with regular expressions (a character loop
  // since): the same tokens pass, every other one is refused.
  const PLAIN = /^[A-Za-z0-9_.:/@+=-]+$/;
  const QUOTED = /^"[\x20-\x7e]*"$/;
  const passes = (t: string) =>
    (QUOTED.test(t) && !/["'#\\]/.test(t.slice(1, -1))) || (PLAIN.test(t) && !t.startsWith("-"));
  it("passes exactly the plain and quoted tokens (every ASCII character, any place)", () => {
    const ascii = fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c));
    const some = fc.constantFrom("a", "0", '"', "-", " ", "é");
    const text = fc.array(fc.oneof(ascii, some), { maxLength: 6 }).map((cs) => cs.join(""));
    fc.assert(
      fc.property(text, (t) => {
        let ok = true;
        try {
          expect(batchLine([t])).toBe(t);
        } catch (err) {
          if (!(err instanceof UnsafeTokenError)) throw err;
          ok = false;
        }
        expect(ok).toBe(passes(t));
      }),
      { numRuns: 20_000 },
    );
  });
});

describe("renderRouteReplace", () => {
  it.each<[string, Route, string]>([
    [
      "IPv4 default via a gateway",
      r({ gateway: "10.248.246.145" }),
      "route replace 0.0.0.0/0 via 10.248.246.145 dev eth0 scope 0 metric 0 table main",
    ],
    [
      "IPv4 subnet via a gateway with a preferred source",
      r({ dst: "10.248.246.144/28", gateway: "10.248.246.145", prefsrc: "10.248.246.146" }),
      "route replace 10.248.246.144/28 via 10.248.246.145 dev eth0 src 10.248.246.146 scope 0 metric 0 table main",
    ],
    [
      "IPv4 scope link host route",
      r({ dst: "10.248.246.145/32", prefsrc: "10.248.246.146", scope: 253 }),
      "route replace 10.248.246.145/32 dev eth0 src 10.248.246.146 scope 253 metric 0 table main",
    ],
    [
      "IPv4 onlink",
      r({ dst: "10.9.0.0/16", gateway: "169.254.1.1", onlink: true }),
      "route replace 10.9.0.0/16 via 169.254.1.1 dev eth0 scope 0 metric 0 onlink table main",
    ],
    [
      "IPv4 with mtu",
      r({ dst: "10.10.0.0/16", gateway: "192.168.1.1", mtu: 1400 }),
      "route replace 10.10.0.0/16 via 192.168.1.1 dev eth0 scope 0 metric 0 mtu 1400 table main",
    ],
    [
      "IPv4 kernel route (restore)",
      r({
        dst: "192.168.1.0/24",
        dev: "eth1",
        prefsrc: "192.168.1.5",
        scope: 253,
        protocol: "kernel",
      }),
      "route replace 192.168.1.0/24 dev eth1 src 192.168.1.5 scope 253 metric 0 proto 2 table main",
    ],
    [
      "IPv4 static with metric",
      r({ dst: "10.11.0.0/16", scope: 253, metric: 100, protocol: "static" }),
      "route replace 10.11.0.0/16 dev eth0 scope 253 metric 100 proto 4 table main",
    ],
    [
      "IPv4 unreachable (no device)",
      r({ dst: "203.0.113.0/24", dev: "", type: "unreachable" }),
      "route replace unreachable 203.0.113.0/24 scope 0 metric 0 table main",
    ],
    [
      "IPv6 default",
      r({ family: 6, dst: "::/0", gateway: "2001:db8::1", metric: 1024 }),
      "route replace ::/0 via 2001:db8::1 dev eth0 scope 0 metric 1024 table main",
    ],
    [
      "IPv6 via link-local with mtu",
      r({ family: 6, dst: "2001:db8:5::/48", gateway: "fe80::1", metric: 1024, mtu: 1300 }),
      "route replace 2001:db8:5::/48 via fe80::1 dev eth0 scope 0 metric 1024 mtu 1300 table main",
    ],
    [
      "IPv6 kernel prefix route",
      r({ family: 6, dst: "2001:db8::/64", metric: 256, protocol: "kernel" }),
      "route replace 2001:db8::/64 dev eth0 scope 0 metric 256 proto 2 table main",
    ],
    [
      "IPv6 unreachable",
      r({ family: 6, dst: "2001:db8:dead::/48", dev: "lo", metric: 1024, type: "unreachable" }),
      "route replace unreachable 2001:db8:dead::/48 dev lo scope 0 metric 1024 table main",
    ],
  ])("%s", (_name, route, line) => {
    expect(renderRouteReplace(route)).toBe(line);
  });

  it("refuses a device name that would inject a command", () => {
    expect(() => renderRouteReplace(r({ dev: "eth0\nlink set lo down" }))).toThrow(
      UnsafeTokenError,
    );
  });
});

describe("renderRouteDelete", () => {
  it.each<[string, Route, string]>([
    [
      "IPv4 default",
      r({ gateway: "192.0.2.1" }),
      "route del 0.0.0.0/0 via 192.0.2.1 dev eth0 scope 0 metric 0 proto 3 table main",
    ],
    [
      "IPv4 kernel route: scope, src and proto select it among same-key twins",
      r({ dst: "10.0.0.0/24", prefsrc: "10.0.0.2", scope: 253, protocol: "kernel" }),
      "route del 10.0.0.0/24 dev eth0 src 10.0.0.2 scope 253 metric 0 proto 2 table main",
    ],
    [
      "IPv6 kernel prefix route",
      r({ family: 6, dst: "2001:db8::/64", metric: 256, protocol: "kernel" }),
      "route del 2001:db8::/64 dev eth0 scope 0 metric 256 proto 2 table main",
    ],
    [
      "IPv6 default",
      r({ family: 6, dst: "::/0", gateway: "fe80::1", metric: 1024 }),
      "route del ::/0 via fe80::1 dev eth0 scope 0 metric 1024 proto 3 table main",
    ],
    [
      "IPv4 unreachable",
      r({ dst: "203.0.113.0/24", dev: "", type: "unreachable" }),
      "route del unreachable 203.0.113.0/24 scope 0 metric 0 proto 3 table main",
    ],
  ])("%s", (_name, route, line) => {
    expect(renderRouteDelete(route)).toBe(line);
  });
});

describe("renderRouteOps", () => {
  it("renders operations in order, one line each", () => {
    const a = r({ dst: "10.0.0.0/24", scope: 253 });
    const b = r({ gateway: "10.0.0.1" });
    const k = r({ family: 6, dst: "fe80::/64", dev: "eth1", metric: 256, protocol: "kernel" });
    expect(
      renderRouteOps([
        { op: "replace", route: a },
        { op: "append", route: k },
        { op: "delete", route: b, reason: "stale" },
      ]),
    ).toEqual([
      "route replace 10.0.0.0/24 dev eth0 scope 253 metric 0 table main",
      "route append fe80::/64 dev eth1 scope 0 metric 256 proto 2 table main",
      "route del 0.0.0.0/0 via 10.0.0.1 dev eth0 scope 0 metric 0 proto 3 table main",
    ]);
  });
});

describe("the route vocabulary: multipath, tos, nexthop objects, metrics, IPv6 from", () => {
  it.each<[string, Route, string, string]>([
    [
      "multipath: paths last, each with its weight",
      r({
        dev: "",
        hops: [
          { gateway: "10.0.0.1", dev: "eth0", weight: 1, onlink: false },
          { gateway: "fd00::1", dev: "eth1", weight: 3, onlink: true },
        ],
      }),
      "route replace 0.0.0.0/0 scope 0 metric 0 table main nexthop via 10.0.0.1 dev eth0 weight 1 nexthop via inet6 fd00::1 dev eth1 weight 3 onlink",
      "route del 0.0.0.0/0 scope 0 metric 0 proto 3 table main nexthop via 10.0.0.1 dev eth0 weight 1 nexthop via inet6 fd00::1 dev eth1 weight 3 onlink",
    ],
    [
      "tos, a nexthop object, metrics with a lock, realms",
      r({
        dst: "100.64.0.0/12",
        dev: "",
        tos: 0x04,
        nhid: 7,
        mtu: 1400,
        attrs: [
          ["advmss", "1200"],
          ["lock", "advmss,mtu"],
          ["realms", "3/7"],
          ["rtt", "100ms"],
        ],
      }),
      "route replace 100.64.0.0/12 tos 0x04 nhid 7 scope 0 metric 0 mtu lock 1400 advmss lock 1200 realms 3/7 rtt 100ms table main",
      "route del 100.64.0.0/12 tos 0x04 nhid 7 scope 0 metric 0 proto 3 advmss lock 1200 realms 3/7 rtt 100ms table main",
    ],
    [
      "IPv6 from, pref and expires; a blackhole through no link is deleted on lo",
      r({
        family: 6,
        dst: "2001:db8::/48",
        from: "fd00::/64",
        dev: "",
        metric: 1024,
        type: "blackhole",
        attrs: [
          ["expires", "600"],
          ["pref", "high"],
        ],
      }),
      "route replace blackhole 2001:db8::/48 from fd00::/64 scope 0 metric 1024 expires 600 pref high table main",
      "route del blackhole 2001:db8::/48 from fd00::/64 dev lo scope 0 metric 1024 proto 3 table main",
    ],
  ])("%s", (_name, route, replace, del) => {
    expect(renderRouteReplace(route)).toBe(replace);
    expect(renderRouteDelete(route)).toBe(del);
  });

  it("nexthop objects: singles (IPv6 without a gateway via ::), blackholes, groups with weights, attributes", () => {
    const base = { onlink: false, blackhole: false, protocol: "unspec" } as const;
    expect(
      renderNexthopReplace({ ...base, id: 5, family: 4, gateway: "10.0.0.1", dev: "eth0" }),
    ).toBe("nexthop replace id 5 via 10.0.0.1 dev eth0");
    expect(
      renderNexthopReplace({ ...base, id: 6, family: 6, dev: "eth0", protocol: "static" }),
    ).toBe("nexthop replace id 6 via :: dev eth0 proto 4");
    expect(renderNexthopReplace({ ...base, id: 7, family: 4, dev: "", blackhole: true })).toBe(
      "nexthop replace id 7 blackhole",
    );
    expect(
      renderNexthopReplace({
        ...base,
        id: 8,
        family: 0,
        dev: "",
        group: [
          { id: 5, weight: 2 },
          { id: 6, weight: 1 },
        ],
        attrs: [
          ["buckets", "8"],
          ["type", "resilient"],
        ],
      }),
    ).toBe("nexthop replace id 8 group 5,2/6 type resilient buckets 8");
    expect(renderNexthopDelete({ id: 8 })).toBe("nexthop del id 8");
  });

  it("writes every protocol by number: iproute2 answers a name it saw before a number with that number", () => {
    const lines = ["static", "200", "static", "openr", "kernel", "boot"].map((protocol, i) =>
      renderRouteReplace(r({ dst: `10.${i}.0.0/16`, protocol })),
    );
    expect(lines.map((l) => / proto (\S+)/.exec(l)?.[1] ?? "(boot)")).toEqual([
      "4",
      "200",
      "4",
      "99",
      "2",
      "(boot)",
    ]);
    expect(renderRouteDelete(r({ protocol: "dhcp" }))).toContain(" proto 16 ");
  });

  it("refuses an attribute value that would be more than one token", () => {
    const bad = r({ attrs: [["congctl", "cubic\nroute flush"]] });
    expect(() => renderRouteReplace(bad)).toThrow(UnsafeTokenError);
  });
});
