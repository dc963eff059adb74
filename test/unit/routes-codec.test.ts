/**
 * The hand-written UpdateRoutesRequest reader and Routes writer against
 * protobuf-es: wherever they answer, the answer is fromBinary's message
 * (same fields, same key order) or toBinary's bytes; on random bytes and
 * mutated encodings they answer only where fromBinary does; values toBinary
 * refuses are left to it (so its error stands).
 */
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RoutesSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { RouteSchema } from "../../src/gen/types_pb";
import type { Route } from "../../src/net/model/model";
import { routeToProto } from "../../src/wire/kata-map";
import { decodeUpdateRoutesRequest } from "../../src/wire/routes-reader";
import { encodeRoutes } from "../../src/wire/routes-writer";
import { mutated } from "./state-codec-helpers";

const ascii = fc.oneof(
  fc.constantFrom("", "10.0.0.0/24", "10.0.0.1", "eth0", "fe80::1", "2001:db8::/64"),
  fc.string({ unit: "binary-ascii", maxLength: 40 }),
);
const text = fc.oneof(
  { weight: 5, arbitrary: ascii },
  fc.string({ unit: "grapheme", maxLength: 6 }),
);
const u32 = fc.oneof(
  fc.constantFrom(0, 1, 4, 253, 1500, 0x7f, 0x80, 0x3fff, 0x4000, 0x7fffffff, 0xffffffff),
  fc.nat(),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const routeInit = (str: fc.Arbitrary<string>) =>
  fc.record({
    dest: str,
    gateway: str,
    device: str,
    source: str,
    scope: u32,
    family: fc.constantFrom(0, 1, 2, 0x7fffffff, -1),
    flags: u32,
    mtu: u32,
  });
type RouteInit = MessageInitShape<typeof RouteSchema>;
const routes = (str: fc.Arbitrary<string>) =>
  fc.array(routeInit(str), { maxLength: 6 }).map((rs) => rs.map((r) => r as RouteInit));
const request = (rs: RouteInit[]) =>
  toBinary(
    UpdateRoutesRequestSchema,
    create(UpdateRoutesRequestSchema, { routes: { Routes: rs } }),
  );

/** fromBinary's message or its error. */
function reference(bytes: Uint8Array): { ok: unknown } | { error: string } {
  try {
    return { ok: fromBinary(UpdateRoutesRequestSchema, bytes) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Where the fast reader answers, it answers fromBinary's message, key order included. */
function agrees(bytes: Uint8Array): boolean {
  const fast = decodeUpdateRoutesRequest(bytes);
  if (fast === undefined) return false;
  const want = reference(bytes);
  expect(want).toHaveProperty("ok");
  const ok = (want as { ok: unknown }).ok;
  expect(fast).toStrictEqual(ok);
  expect(JSON.stringify(fast)).toBe(JSON.stringify(ok));
  return true;
}

describe("decodeUpdateRoutesRequest against fromBinary", () => {
  it("reads every encoded request of ASCII routes, as fromBinary does", () => {
    fc.assert(
      fc.property(routes(ascii), (rs) => {
        // A negative enum is a ten-byte varint and an all-default route
        // encodes empty: both left to fromBinary (tests below).
        const common = rs.filter(
          (r) => (r.family as number) >= 0 && Object.values(r).some((v) => v !== "" && v !== 0),
        );
        expect(agrees(request(common))).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it("requests with non-ASCII text: fromBinary's message or no answer", () => {
    fc.assert(
      fc.property(routes(text), (rs) => {
        agrees(request(rs));
      }),
      { numRuns: 5_000 },
    );
  });

  it("mutated encodings and random bytes: fromBinary's message or no answer", () => {
    let answered = 0;
    const start = fc.oneof(routes(ascii).map(request), fc.uint8Array({ maxLength: 40 }));
    fc.assert(
      fc.property(mutated(start), (bytes) => {
        if (agrees(bytes)) answered++;
      }),
      { numRuns: 20_000 },
    );
    // Not vacuous: many mutated requests are still well formed and read here.
    expect(answered).toBeGreaterThan(1000);
  });

  it("reads at most `limit` routes (more are countRepeated's to refuse)", () => {
    const three = request([{ dest: "10.0.0.0/24" }, { dest: "10.0.1.0/24" }, { mtu: 1400 }]);
    expect(decodeUpdateRoutesRequest(three, 2)).toBeUndefined();
    expect(decodeUpdateRoutesRequest(three, 3)).toStrictEqual(
      fromBinary(UpdateRoutesRequestSchema, three),
    );
    expect(decodeUpdateRoutesRequest(request([]), 0)).toStrictEqual(
      fromBinary(UpdateRoutesRequestSchema, request([])),
    );
  });

  it("leaves an empty payload, other fields and a second `routes` to fromBinary", () => {
    const one = request([{ dest: "10.0.0.0/24", device: "eth0" }]);
    expect(decodeUpdateRoutesRequest(new Uint8Array())).toBeUndefined();
    // Empty routes (the cheapest flood) are left to countRepeated and fromBinary.
    expect(decodeUpdateRoutesRequest(request([{}, {}]))).toBeUndefined();
    expect(decodeUpdateRoutesRequest(Uint8Array.from([...one, ...one]))).toBeUndefined();
    expect(decodeUpdateRoutesRequest(Uint8Array.from([...one, 0x10, 0x01]))).toBeUndefined();
  });
});

describe("encodeRoutes against toBinary", () => {
  it("writes toBinary's bytes for routes of ASCII text and uint32 values", () => {
    fc.assert(
      fc.property(routes(ascii), (rs) => {
        const message = create(RoutesSchema, {
          Routes: rs.filter((r) => (r.family as number) >= 0),
        });
        const fast = encodeRoutes(message);
        expect(fast).toBeDefined();
        expect(fast).toStrictEqual(toBinary(RoutesSchema, message));
      }),
      { numRuns: 5_000 },
    );
  });

  it("non-ASCII text and values toBinary refuses are left to toBinary", () => {
    const bad = fc.record({
      scope: fc.constantFrom(-1, 0.5, 2 ** 32, Number.NaN),
      family: fc.constantFrom(-1, 2 ** 31, 0.5),
      mtu: fc.constantFrom(-5, 1e20),
    });
    fc.assert(
      fc.property(routes(text), bad, fc.nat(3), (rs, b, which) => {
        const message = create(RoutesSchema, { Routes: rs });
        const fast = encodeRoutes(message);
        if (fast !== undefined) expect(fast).toStrictEqual(toBinary(RoutesSchema, message));
        if (message.Routes.length === 0) return;
        const odd = message.Routes[0] as unknown as Record<string, unknown>;
        if (which === 0) odd.scope = b.scope;
        else if (which === 1) odd.family = b.family;
        else if (which === 2) odd.mtu = b.mtu;
        else odd.flags = -2;
        expect(encodeRoutes(message)).toBeUndefined();
      }),
      { numRuns: 3_000 },
    );
  });
});

describe("routeToProto", () => {
  it("builds the message create(RouteSchema, ...) builds, key order included", () => {
    const route = fc.record(
      {
        family: fc.constantFrom(4 as const, 6 as const),
        dst: ascii,
        gateway: ascii,
        dev: ascii,
        prefsrc: ascii,
        scope: u32,
        metric: u32,
        onlink: fc.boolean(),
        mtu: u32,
        protocol: fc.constant("boot"),
        type: fc.constant("unicast"),
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
    );
    fc.assert(
      fc.property(route, (r: Route) => {
        const want = create(RouteSchema, {
          dest: r.dst,
          gateway: r.gateway ?? "",
          device: r.dev,
          source: r.prefsrc ?? "",
          scope: r.scope,
          family: r.family === 6 ? 1 : 0,
          flags: r.onlink ? 4 : 0,
          mtu: r.mtu,
        });
        expect(routeToProto(r)).toStrictEqual(want);
        expect(JSON.stringify(routeToProto(r))).toBe(JSON.stringify(want));
      }),
      { numRuns: 2_000 },
    );
  });
});
