/**
 * Apply's route validation with its fast path (validate-state-fast.ts)
 * against the version before it (test/unit/oracle/validate-state-routes-v1.ts):
 * for random route lists mixing plain routes, the vocabulary's other
 * shapes, invalid and non-canonical values, duplicates and twins of one
 * key, both give the same routes (same keys in the same order) or the same
 * error (code and message, which names the field and the value).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { routesFromWire } from "../../src/agent/validate/validate-state-routes";
import { NexthopSchema, RouteSchema } from "../../src/gen/network_pb";
import { TtrpcError } from "../../src/ttrpc/codes";
import { routesFromWire as routesFromWireV1 } from "./oracle/validate-state-routes-v1";

const route = (r: object) => create(RouteSchema, r as MessageInitShape<typeof RouteSchema>);

const addr = fc.oneof(
  fc.constantFrom(
    "10.1.2.0",
    "10.1.2.3",
    "0.0.0.0",
    "127.0.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "010.0.0.0",
    "1.2.3",
    "256.1.1.1",
    "2001:db8::",
    "::",
    "::1",
    "ff02::1",
    "fe80::1",
    "::ffff:1.2.3.4",
    "2001:DB8::1",
    "x",
    "",
  ),
  fc.tuple(fc.nat(255), fc.nat(3), fc.nat(255)).map(([a, b, c]) => `10.${a}.${b}.${c}`),
);
const suffix = fc.constantFrom(
  "",
  "/0",
  "/8",
  "/24",
  "/32",
  "/024",
  "/33",
  "/64",
  "/",
  "/x",
  "/24/1",
);
const dest = fc.oneof(
  fc.tuple(addr, suffix).map(([a, s]) => a + s),
  fc.tuple(fc.nat(3), fc.nat(255)).map(([a, b]) => `172.16.${a}.${b}/32`),
  fc.constant(""),
);
const wireRoute = fc.record({
  table: fc.constantFrom(0, 0, 254, 100, 255),
  family: fc.constantFrom(0, 0, 4, 6, 5),
  dest,
  gateway: fc.oneof(fc.constantFrom("", "", "10.0.0.1", "10.0.0.1", "fe80::1"), addr),
  device: fc.constantFrom("eth0", "eth0", "eth1", "lo", "", "-x", "abcdefghijklmnop"),
  source: fc.constantFrom("", "", "", "10.0.0.2", "fe80::2", "10.0.0.2/32", "x"),
  metric: fc.constantFrom(0, 0, 100),
  type: fc.constantFrom(0, 0, 0, 1, 5, 10),
  scope: fc.constantFrom(0, 0, 253, 256),
  onlink: fc.boolean(),
  mtu: fc.constantFrom(0, 0, 1500, 67, 70000),
  protocol: fc.constantFrom("", "", "kernel", "static", "bogus", "300"),
  attrs: fc.constantFrom(
    [],
    [],
    [],
    [{ name: "advmss", value: "1400" }],
    [{ name: "x", value: "1" }],
  ),
  hops: fc.constantFrom(
    [],
    [],
    [],
    [{ gateway: "10.0.0.1", device: "eth0", weight: 1 }],
    [
      { gateway: "10.0.0.1", device: "eth0", weight: 1 },
      { gateway: "10.1.0.1", device: "eth1", weight: 2 },
    ],
  ),
  nhid: fc.constantFrom(0, 0, 0, 0, 1, 7),
  tos: fc.constantFrom(0, 0, 0, 4, 5),
  from: fc.constantFrom("", "", "", "fd00::/64"),
});
const nexthops = [
  create(NexthopSchema, { id: 1, gateway: "10.0.0.1", device: "eth0" }),
  create(NexthopSchema, { id: 2, family: 6, gateway: "fe80::1", device: "eth0" }),
];

function outcome(f: () => unknown): unknown {
  try {
    // JSON keeps the key order: the same routes built the same way.
    return { ok: JSON.stringify(f()) };
  } catch (err) {
    if (!(err instanceof TtrpcError)) throw err;
    return { code: err.code, message: err.message };
  }
}

const same = (inits: object[]) => {
  const routes = inits.map(route);
  expect(outcome(() => routesFromWire(routes, nexthops, 100))).toStrictEqual(
    outcome(() => routesFromWireV1(routes, nexthops, 100)),
  );
};

describe("Apply's routes against the version before the fast path", () => {
  it("random lists: same routes or the same error", () => {
    fc.assert(fc.property(fc.array(wireRoute, { maxLength: 6 }), same), { numRuns: 20_000 });
  });

  it("lists drawn from a few routes: duplicates and twins of one key", () => {
    fc.assert(
      fc.property(
        fc.array(wireRoute, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(), { minLength: 2, maxLength: 8 }),
        (pool, picks) => same(picks.map((p) => pool[p % pool.length] as object)),
      ),
      { numRuns: 20_000 },
    );
  });

  it("plain tables, and one value off: the fast path's own routes and its edges", () => {
    const plain = fc.record({
      table: fc.constantFrom(0, 254, 100),
      family: fc.constantFrom(0, 4, 4, 4, 6, 5),
      dest: fc.oneof(
        fc.tuple(fc.nat(3), fc.nat(255), fc.nat(32)).map(([a, b, p]) => `172.${a}.${b}.0/${p}`),
        fc.constantFrom("172.16.0.1/24", "172.16.0.0/024", "172.16.0.0", "", "fd00::/64"),
      ),
      gateway: fc.constantFrom(
        ...["", "10.0.0.1", "10.1.0.1", "fe80::1", "0.0.0.0", "::"],
        ...["127.0.0.1", "224.0.0.1", "255.255.255.255", "::1", "ff02::1", "x", "010.0.0.1"],
      ),
      device: fc.constantFrom("eth0", "eth1", "eth1", "lo", "", "-x", "abcdefghijklmnop"),
      source: fc.constantFrom("", "", "10.0.0.2", "fe80::2", "10.0.0.2/32", "x"),
      metric: fc.constantFrom(0, 100),
      scope: fc.constantFrom(0, 0, 253, 255, 256),
      onlink: fc.boolean(),
      mtu: fc.constantFrom(0, 0, 68, 65535, 67, 65536),
      protocol: fc.constantFrom("", "", "kernel", "static", "255", "256", "bogus"),
    });
    fc.assert(fc.property(fc.array(plain, { maxLength: 12 }), same), { numRuns: 10_000 });
  });
});
