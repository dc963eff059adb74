/**
 * routeToWire's literal for the common route (no paths, no attributes)
 * against create(RouteSchema, ...), which it stands in for: the same
 * message (toStrictEqual, key order included) for random model routes,
 * and the same as create for routes with paths or attributes.
 */
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RouteSchema, RouteType } from "../../src/gen/network_pb";
import { familyOf } from "../../src/net/model/address";
import type { Route } from "../../src/net/model/model";
import { TABLE_MAIN } from "../../src/net/vocabulary/routes";
import { ROUTE_TYPES, routeToWire } from "../../src/wire/state-map";

/** The message as create() builds it from the model route (routeToWire before its literal). */
function reference(r: Route) {
  return create(RouteSchema, {
    table: r.table ?? TABLE_MAIN,
    family: r.family,
    dest: r.dst,
    gateway: r.gateway ?? "",
    device: r.dev,
    source: r.prefsrc ?? "",
    metric: r.metric,
    type: ROUTE_TYPES[r.type] ?? RouteType.UNICAST,
    scope: r.scope,
    onlink: r.onlink,
    mtu: r.mtu,
    protocol: r.protocol,
    attrs: (r.attrs ?? []).map(([name, value]) => ({ name, value })),
    hops: (r.hops ?? []).map((h) => ({
      gateway: h.gateway ?? "",
      device: h.dev,
      weight: h.weight,
      onlink: h.onlink,
      family: h.gateway ? familyOf(h.gateway) : 0,
    })),
    nhid: r.nhid ?? 0,
    tos: r.tos ?? 0,
    from: r.from ?? "",
  });
}

const route: fc.Arbitrary<Route> = fc
  .record(
    {
      family: fc.constantFrom(4 as const, 6 as const),
      table: fc.constantFrom(254, 100, 255, 0xffffffff),
      dst: fc.constantFrom("10.0.0.0/24", "0.0.0.0/0", "fd00::/64"),
      gateway: fc.constantFrom("10.0.0.1", "fe80::1"),
      dev: fc.constantFrom("eth0", "", "lo"),
      prefsrc: fc.constantFrom("10.0.0.2"),
      scope: fc.constantFrom(0, 253, 254),
      metric: fc.constantFrom(0, 1024),
      onlink: fc.boolean(),
      mtu: fc.constantFrom(0, 1400),
      protocol: fc.constantFrom("boot", "kernel", "static", "42"),
      type: fc.constantFrom("unicast", "local", "blackhole", "nat", "bogus"),
      tos: fc.constantFrom(0, 4),
      from: fc.constantFrom("fd00::/64"),
      nhid: fc.constantFrom(1, 100),
      hops: fc.constantFrom([
        { gateway: "10.0.0.1", dev: "eth0", weight: 1, onlink: true },
        { dev: "eth1", weight: 2, onlink: false },
      ]),
      attrs: fc.constantFrom([["advmss", "1400"]] as [string, string][]),
    },
    {
      requiredKeys: [
        "family",
        "dst",
        "dev",
        "scope",
        "metric",
        "onlink",
        "mtu",
        "protocol",
        "type",
      ],
    },
  )
  .map((r) => r as Route);

describe("routeToWire", () => {
  it("is create()'s message for every model route, key order included", () => {
    let literal = 0;
    fc.assert(
      fc.property(route, (r) => {
        if (r.hops === undefined && r.attrs === undefined) literal++;
        const got = routeToWire(r);
        const want = reference(r);
        expect(got).toStrictEqual(want);
        expect(JSON.stringify(got)).toBe(JSON.stringify(want));
      }),
      { numRuns: 5_000 },
    );
    // Not vacuous: the literal answered many of them.
    expect(literal).toBeGreaterThan(50);
  });
});
