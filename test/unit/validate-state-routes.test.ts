/**
 * Apply's validation of the route vocabulary (validate-state-routes.ts):
 * paths, nexthop objects, tos, from, attributes by their table, the
 * duplicates `ip route append` makes; every refusal names the field and
 * the value, every bound is reached, and what is accepted comes out in
 * canonical form.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LIMITS, validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import type { DesiredState } from "../../src/net/model/full-state";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";

type Wire = Record<string, unknown>;

const validate = (desired: Wire): DesiredState =>
  validateApply(create(ApplyRequestSchema, { desired }));

function refusal(desired: Wire): string {
  try {
    validate(desired);
  } catch (err) {
    expect((err as TtrpcError).code).toBe(Code.INVALID_ARGUMENT);
    return (err as Error).message;
  }
  throw new Error("accepted");
}

const hop = (gateway: string, device = "eth0", weight = 1) => ({ gateway, device, weight });
const gw4 = { dest: "10.9.0.0/16", gateway: "10.0.0.1", device: "eth0" };
const single = (id: number, gateway = "10.0.0.1") => ({ id, gateway, device: "eth0" });

describe("routes: what is refused, naming field and value", () => {
  it.each<[string, Wire, string]>([
    [
      "a path without a link",
      { routes: [{ dest: "10.9.0.0/16", hops: [hop("10.0.0.1", ""), hop("10.0.0.2")] }] },
      'desired.routes[0].hops[0].device: ""',
    ],
    [
      "a path's weight above 256",
      { routes: [{ dest: "10.9.0.0/16", hops: [hop("10.0.0.1", "eth0", 257), hop("10.0.0.2")] }] },
      "desired.routes[0].hops[0].weight: 257 is above 256",
    ],
    [
      "an IPv4 gateway on an IPv6 route's path",
      { routes: [{ dest: "2001:db8::/48", hops: [hop("10.0.0.1"), hop("fe80::1")] }] },
      'desired.routes[0].hops[0].gateway: "10.0.0.1" is IPv4 in an IPv6 entry',
    ],
    [
      "a path's family that is not its gateway's",
      {
        routes: [
          { dest: "10.9.0.0/16", hops: [{ ...hop("10.0.0.1"), family: 6 }, hop("10.0.0.2")] },
        ],
      },
      "desired.routes[0].hops[0].family: 6 does not match its gateway",
    ],
    [
      "paths on a blackhole route",
      { routes: [{ dest: "10.9.0.0/16", type: 1, hops: [hop("10.0.0.1"), hop("10.0.0.2")] }] },
      "desired.routes[0].hops: 2 are given for a blackhole route",
    ],
    [
      "paths and the route's own gateway",
      { routes: [{ ...gw4, hops: [hop("10.0.0.1"), hop("10.0.0.2")] }] },
      "desired.routes[0].hops: 2 are given with the route's own gateway",
    ],
    [
      "a nexthop object the request does not have",
      { routes: [{ dest: "10.9.0.0/16", nhid: 7 }] },
      "desired.routes[0].nhid: 7 is not a nexthop of the request",
    ],
    [
      "a nexthop object and a gateway",
      { routes: [{ ...gw4, nhid: 7 }], nexthops: [single(7)] },
      "desired.routes[0].nhid: 7 is given with a gateway",
    ],
    [
      "an IPv6 route by an IPv4 object",
      { routes: [{ dest: "2001:db8::/48", nhid: 7 }], nexthops: [single(7)] },
      "desired.routes[0].nhid: 7 is not IPv6",
    ],
    [
      "a tos on an IPv6 route",
      { routes: [{ dest: "2001:db8::/48", device: "eth0", tos: 4 }] },
      "desired.routes[0].tos: 4 is given for an IPv6 route",
    ],
    [
      "a tos with the ECN bits",
      { routes: [{ ...gw4, tos: 5 }] },
      "desired.routes[0].tos: 5 is not a TOS",
    ],
    [
      "a source prefix on an IPv4 route",
      { routes: [{ ...gw4, from: "10.1.0.0/16" }] },
      'desired.routes[0].from: "10.1.0.0/16" is given for an IPv4 route',
    ],
    [
      "a source prefix that is no CIDR",
      { routes: [{ dest: "2001:db8::/48", device: "eth0", from: "fd00::/200" }] },
      'desired.routes[0].from: "fd00::/200"',
    ],
  ])("%s", (_what, desired, text) => {
    expect(refusal(desired)).toContain(text);
  });
});

describe("routes: what is refused, naming field and value: attributes, locks, gateways, types", () => {
  it.each<[string, Wire, string]>([
    [
      "an attribute not in the table",
      { routes: [{ ...gw4, attrs: [{ name: "bogus", value: "1" }] }] },
      'desired.routes[0].attrs[0]: "bogus" is not an attribute of its kind (advmss, congctl',
    ],
    [
      "an attribute value outside its grammar",
      { routes: [{ ...gw4, attrs: [{ name: "advmss", value: "x" }] }] },
      'desired.routes[0].attrs[0]: "advmss" value "x" is not a number 0-4294967295',
    ],
    [
      "an attribute twice",
      {
        routes: [
          {
            ...gw4,
            attrs: [
              { name: "cwnd", value: "1" },
              { name: "cwnd", value: "2" },
            ],
          },
        ],
      },
      'desired.routes[0].attrs[1]: "cwnd" is listed twice',
    ],
    [
      "an IPv6 attribute on an IPv4 route",
      { routes: [{ ...gw4, attrs: [{ name: "pref", value: "high" }] }] },
      'desired.routes[0].attrs[0]: "pref" is for IPv6 only',
    ],
    [
      "a lock of a metric the route does not set",
      { routes: [{ ...gw4, attrs: [{ name: "lock", value: "advmss" }] }] },
      'desired.routes[0].attrs: "lock" names advmss, which the route does not set',
    ],
    [
      "a lock list out of order",
      { routes: [{ ...gw4, mtu: 1400, attrs: [{ name: "lock", value: "mtu,advmss" }] }] },
      'desired.routes[0].attrs[0]: "lock" value "mtu,advmss" is not a sorted comma list',
    ],
    [
      "a loopback gateway",
      { routes: [{ ...gw4, gateway: "127.0.0.1" }] },
      'desired.routes[0].gateway: "127.0.0.1" is a loopback address',
    ],
    [
      "a device on a nat route",
      { routes: [{ dest: "10.9.0.0/16", type: 9, device: "eth0" }] },
      'desired.routes[0].device: "eth0" is given for a nat route',
    ],
    [
      "a local route without a link",
      { routes: [{ dest: "10.9.0.0/16", type: 5 }] },
      'desired.routes[0].device: "" is empty: a local route needs a link',
    ],
    [
      "a route type beyond the table",
      { routes: [{ ...gw4, type: 10 }] },
      "desired.routes[0].type: 10 is not a route type (0-9)",
    ],
  ])("%s", (_what, desired, text) => {
    expect(refusal(desired)).toContain(text);
  });
});

describe("nexthop objects: what is refused, naming field and value", () => {
  it.each<[string, Wire, string]>([
    [
      "id 0",
      { nexthops: [{ id: 0, device: "eth0" }] },
      "desired.nexthops[0].id: 0 is not a nexthop id",
    ],
    [
      "an id twice",
      { nexthops: [single(5), single(5)] },
      "desired.nexthops[1].id: 5 is listed twice",
    ],
    [
      "a single one without a link",
      { nexthops: [{ id: 5, gateway: "10.0.0.1" }] },
      'desired.nexthops[0].device: "" is empty',
    ],
    [
      "a blackhole with a link",
      { nexthops: [{ id: 5, blackhole: true, device: "eth0" }] },
      "desired.nexthops[0].blackhole: true is given with a gateway, device or onlink",
    ],
    [
      "a group with a gateway",
      { nexthops: [single(5), { id: 6, gateway: "10.0.0.1", group: [{ id: 5 }] }] },
      "desired.nexthops[1].group: 1 is given with a gateway",
    ],
    [
      "a member the request does not have",
      { nexthops: [{ id: 6, group: [{ id: 5 }] }] },
      "desired.nexthops[0].group[0].id: 5 is not a nexthop of the request",
    ],
    [
      "a group of groups",
      { nexthops: [single(5), { id: 6, group: [{ id: 5 }] }, { id: 7, group: [{ id: 6 }] }] },
      "desired.nexthops[2].group[0].id: 6 is a group",
    ],
    [
      "a member twice",
      { nexthops: [single(5), { id: 6, group: [{ id: 5 }, { id: 5 }] }] },
      "desired.nexthops[1].group[1].id: 5 is listed twice",
    ],
    [
      "a member's weight above 256",
      { nexthops: [single(5), { id: 6, group: [{ id: 5, weight: 300 }] }] },
      "desired.nexthops[1].group[0].weight: 300 is above 256",
    ],
    [
      "a group's attribute on a single one",
      { nexthops: [{ ...single(5), attrs: [{ name: "type", value: "resilient" }] }] },
      'desired.nexthops[0].attrs: "type" is for a group only',
    ],
    [
      "buckets without type resilient",
      {
        nexthops: [
          single(5),
          { id: 6, group: [{ id: 5 }], attrs: [{ name: "buckets", value: "8" }] },
        ],
      },
      'desired.nexthops[1].attrs: "buckets" is for a resilient group only',
    ],
    [
      "a gateway of the other family",
      { nexthops: [{ id: 5, family: 6, gateway: "10.0.0.1", device: "eth0" }] },
      'desired.nexthops[0].gateway: "10.0.0.1" is IPv4 in an IPv6 entry',
    ],
  ])("%s", (_what, desired, text) => {
    expect(refusal(desired)).toContain(text);
  });
});

describe("bounds (docs/limits.md)", () => {
  it("paths per route", () => {
    const hops = Array.from({ length: LIMITS.hops + 1 }, (_, i) =>
      hop(`10.0.${i >> 8}.${i & 255}`),
    );
    expect(refusal({ routes: [{ dest: "10.9.0.0/16", hops }] })).toContain(
      `desired.routes[0].hops: ${LIMITS.hops + 1} entries: at most ${LIMITS.hops}`,
    );
  });

  it("attributes per route, and bytes per value", () => {
    const attrs = Array.from({ length: LIMITS.attrsPerObject + 1 }, (_, i) => ({
      name: `a${i}`,
      value: "1",
    }));
    expect(refusal({ routes: [{ ...gw4, attrs }] })).toContain(
      `desired.routes[0].attrs: ${LIMITS.attrsPerObject + 1} entries: at most ${LIMITS.attrsPerObject}`,
    );
    const long = "x".repeat(LIMITS.attrValueBytes + 1);
    expect(refusal({ routes: [{ ...gw4, attrs: [{ name: "congctl", value: long }] }] })).toContain(
      `"congctl" value is longer than ${LIMITS.attrValueBytes} bytes`,
    );
  });

  it("nexthop objects, and members per group", () => {
    const many = Array.from({ length: LIMITS.nexthops + 1 }, (_, i) => single(i + 1));
    expect(refusal({ nexthops: many })).toContain(
      `desired.nexthops: ${LIMITS.nexthops + 1} entries: at most ${LIMITS.nexthops}`,
    );
    const group = Array.from({ length: LIMITS.groupMembers + 1 }, (_, i) => ({ id: i + 1 }));
    expect(refusal({ nexthops: [{ id: 9999, group }] })).toContain(
      `desired.nexthops[0].group: ${LIMITS.groupMembers + 1} entries: at most ${LIMITS.groupMembers}`,
    );
  });
});

describe("what is accepted, canonical", () => {
  it("keeps what ip route append made, in order; drops exact duplicates", () => {
    const d = validate({
      routes: [
        { dest: "10.9.0.0/16", gateway: "10.0.0.1", device: "eth0", metric: 5 },
        { dest: "10.9.0.0/16", gateway: "10.0.0.3", device: "eth0", metric: 5 },
        { dest: "10.9.0.0/16", gateway: "10.0.0.1", device: "eth0", metric: 5 },
      ],
    });
    expect(d.routes.map((r) => r.gateway)).toEqual(["10.0.0.1", "10.0.0.3"]);
  });

  it("refuses what IPv6 would join into one multipath route, or two routes of one key on one link", () => {
    const v6 = { dest: "2001:db8::/48", device: "eth0" };
    expect(
      refusal({
        routes: [
          { ...v6, gateway: "fe80::1" },
          { ...v6, gateway: "fe80::2" },
        ],
      }),
    ).toContain("IPv6 makes them one multipath route; give it once with hops");
    expect(refusal({ routes: [v6, { ...v6, type: 5 }] })).toContain(
      "clashes with desired.routes[0]: same table, destination, metric and device",
    );
  });

  it("sorts attributes, leaves out unset values, and makes one path a plain route", () => {
    const d = validate({
      routes: [
        {
          dest: "10.9.0.0/16",
          hops: [{ gateway: "10.0.0.1", device: "eth0", weight: 0, onlink: true }],
          attrs: [
            { name: "rtt", value: "100ms" },
            { name: "advmss", value: "1200" },
            { name: "quickack", value: "0" },
          ],
        },
        { dest: "2001:db8::/48", device: "eth0", attrs: [{ name: "pref", value: "medium" }] },
        {
          dest: "0.0.0.0/0",
          hops: [hop("10.0.0.1"), { gateway: "fd00::1", device: "eth1", weight: 0 }],
        },
      ],
    });
    expect(d.routes[0]).toMatchObject({ gateway: "10.0.0.1", dev: "eth0", onlink: true });
    expect(d.routes[0]?.hops).toBeUndefined();
    expect(d.routes[0]?.attrs).toEqual([
      ["advmss", "1200"],
      ["rtt", "100ms"],
    ]);
    expect(d.routes[1]?.attrs).toBeUndefined();
    expect(d.routes[2]?.hops).toEqual([
      { gateway: "10.0.0.1", dev: "eth0", weight: 1, onlink: false },
      { gateway: "fd00::1", dev: "eth1", weight: 1, onlink: false },
    ]);
  });

  it("takes IPv4 via an IPv6 gateway, a nexthop group and the route by it", () => {
    const d = validate({
      routes: [
        { dest: "10.9.0.0/16", family: 4, gateway: "fd00::1", device: "eth0" },
        { dest: "10.8.0.0/16", nhid: 7 },
      ],
      nexthops: [
        single(5),
        { id: 6, device: "eth1", family: 6 },
        { id: 7, group: [{ id: 5, weight: 2 }, { id: 6 }] },
      ],
    });
    expect(d.routes[0]).toMatchObject({ family: 4, gateway: "fd00::1" });
    expect(d.routes[1]).toMatchObject({ nhid: 7, dev: "" });
    expect(d.nexthops[1]).toMatchObject({ family: 6, dev: "eth1" });
    expect(d.nexthops[2]?.group).toEqual([
      { id: 5, weight: 2 },
      { id: 6, weight: 1 },
    ]);
  });
});
