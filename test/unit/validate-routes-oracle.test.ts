/**
 * validateRoutes (allocation-free) against the plain version it replaced
 * (test/unit/oracle/validate-routes-v1.ts): for random route lists mixing
 * valid and invalid fields, duplicates and clashes, both give the same
 * routes (same keys in the same order) or the same error (code and message,
 * which names the field and the value).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { validateRoutes } from "../../src/agent/validate/validate-routes";
import { type Route as ProtoRoute, RouteSchema } from "../../src/gen/types_pb";
import { TtrpcError } from "../../src/ttrpc/codes";
import { validateRoutes as validateRoutesV1 } from "./oracle/validate-routes-v1";

/** A proto Route; family may be out of the enum (2), as a peer may send. */
const proto = (r: object) => create(RouteSchema, r as MessageInitShape<typeof RouteSchema>);

const addr = fc.oneof(
  fc.constantFrom(
    "10.1.2.0",
    "10.1.2.3",
    "192.168.157.204",
    "0.0.0.0",
    "255.255.255.255",
    "010.0.0.0",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "2001:db8::",
    "2001:db8::1:2",
    "::",
    "fe80::1",
    "::ffff:1.2.3.4",
    "fe80::1%eth0",
    "2001:DB8::1",
    "x",
    "",
  ),
  fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join(".")),
  fc.string({ maxLength: 6 }),
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
  "/128",
  "/129",
  "/",
  "/x",
  "/24/1",
  "/1e1",
);
const cidr = fc.tuple(addr, suffix).map(([a, s]) => a + s);
const protoRoute = fc.record({
  dest: fc.oneof(cidr, fc.constant("")),
  gateway: fc.oneof(
    fc.constant(""),
    addr,
    fc.constantFrom("10.0.0.1", "0.0.0.0", "::", "a/b:c", "10.0.0.1/24"),
  ),
  device: fc.oneof(
    fc.constantFrom("eth0", "eth0", "eth1", "lo", "", "-x", "eth 0", "abcdefghijklmnop"),
    fc.string({ maxLength: 4 }),
  ),
  source: fc.oneof(
    fc.constant(""),
    fc.constant(""),
    fc.tuple(addr, fc.constantFrom("", "/32", "/128", "/24", "/32/1")).map(([a, s]) => a + s),
  ),
  scope: fc.constantFrom(0, 0, 253, 254, 255, 256),
  family: fc.constantFrom(0, 0, 1, 2),
  flags: fc.constantFrom(0, 0, 4, 0x10, 0x14, 2, 0x100),
  mtu: fc.constantFrom(0, 0, 1500, 67, 68, 65535, 70000),
});

function outcome(f: () => unknown): unknown {
  try {
    // JSON keeps the key order: the same routes built the same way.
    return { ok: JSON.stringify(f()) };
  } catch (err) {
    if (!(err instanceof TtrpcError)) throw err;
    return { code: err.code, message: err.message };
  }
}

const same = (routes: ProtoRoute[]) =>
  expect(outcome(() => validateRoutes(routes))).toStrictEqual(
    outcome(() => validateRoutesV1(routes)),
  );

describe("validateRoutes against the plain version it replaced", () => {
  it("random lists: same routes or the same error", () => {
    fc.assert(
      fc.property(fc.array(protoRoute, { maxLength: 6 }), (inits) => {
        same(inits.map(proto));
      }),
      { numRuns: 20_000 },
    );
  });

  it("lists drawn from a few routes: duplicates and clashes", () => {
    fc.assert(
      fc.property(
        fc.array(protoRoute, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(), { minLength: 2, maxLength: 8 }),
        (pool, picks) => {
          same(picks.map((p) => proto(pool[p % pool.length] as object)));
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it("valid tables of both families, host bits and bare addresses", () => {
    const valid = fc.record({
      dest: fc.oneof(
        fc
          .tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(32))
          .map(([a, b, c, p]) => `10.${a}.${b}.${c}/${p}`),
        // Networks, canonical or with a length written with leading zeros.
        fc
          .tuple(fc.nat(0xffffffff), fc.nat(32), fc.constantFrom("", "", "0"))
          .map(([a, p, zeros]) => {
            const v = a - (a % 2 ** (32 - p));
            return `${[v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".")}/${zeros}${p}`;
          }),
        fc.tuple(fc.nat(0xffff), fc.nat(128)).map(([a, p]) => `2001:db8:${a.toString(16)}::1/${p}`),
        fc.tuple(fc.nat(255), fc.nat(255)).map(([a, b]) => `10.9.${a}.${b}`),
      ),
      gateway: fc.constantFrom("", "10.0.0.1", "fe80::1"),
      device: fc.constantFrom("eth0", "eth1"),
      family: fc.constantFrom(0, 1),
    });
    fc.assert(
      fc.property(fc.array(valid, { maxLength: 20 }), (inits) => {
        same(inits.map(proto));
      }),
      { numRuns: 5_000 },
    );
  });
});
