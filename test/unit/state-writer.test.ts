/**
 * The hand-written ApplyResponse and State writers (src/wire/state-writer.ts)
 * against toBinary: wherever they answer, the bytes are toBinary's; the
 * common shape (ASCII text, uint32 values) is answered; text and values
 * toBinary refuses are left to it (so its error stands).
 */
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApplyResponseSchema, StateSchema } from "../../src/gen/network_pb";
import { encodeApplyResponse, encodeState } from "../../src/wire/state-writer";

const ascii = fc.oneof(
  fc.constantFrom("", "10.0.0.0/24", "10.0.0.1", "eth0", "fe80::1", "kernel", "fd00::/64"),
  fc.string({ unit: "binary-ascii", maxLength: 20 }),
);
const text = fc.oneof(
  { weight: 5, arbitrary: ascii },
  fc.string({ unit: "grapheme", maxLength: 6 }),
);
const u32 = fc.oneof(
  fc.constantFrom(0, 1, 4, 100, 254, 1500, 0x7f, 0x80, 0x3fff, 0x4000, 0x7fffffff, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const route = (str: fc.Arbitrary<string>) =>
  fc.record(
    {
      table: u32,
      family: u32,
      dest: str,
      gateway: str,
      device: str,
      source: str,
      metric: u32,
      type: fc.constantFrom(0, 1, 5, 9, 0x7fffffff),
      scope: u32,
      onlink: fc.boolean(),
      mtu: u32,
      protocol: str,
      attrs: fc.constantFrom([], [], [{ name: "advmss", value: "1400" }]),
      hops: fc.constantFrom([], [], [{ gateway: "10.0.0.1", device: "eth0", weight: 2 }]),
      nhid: u32,
      tos: u32,
      from: str,
    },
    { requiredKeys: [] },
  );
const state = (str: fc.Arbitrary<string>) =>
  fc.record(
    {
      interfaces: fc.array(fc.record({ mac: str, name: str, mtu: u32 }), { maxLength: 2 }),
      routes: fc.array(route(str), { maxLength: 6 }),
      rules: fc.array(fc.record({ priority: u32, from: str, table: u32 }), { maxLength: 2 }),
      neighbors: fc.array(fc.record({ address: str, device: str }), { maxLength: 2 }),
      sysctls: fc.array(fc.record({ key: str, value: str }), { maxLength: 2 }),
      nexthops: fc.array(fc.record({ id: u32, gateway: str, device: str }), { maxLength: 2 }),
    },
    { requiredKeys: [] },
  );
type Init = MessageInitShape<typeof ApplyResponseSchema>;
const response = (str: fc.Arbitrary<string>) =>
  fc
    .record(
      {
        result: state(str),
        plan: fc.array(str, { maxLength: 4 }),
        leftOut: fc.array(fc.record({ field: str, reason: str }), { maxLength: 2 }),
      },
      { requiredKeys: ["plan"] },
    )
    .map((r) => create(ApplyResponseSchema, r as Init));

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("encodeApplyResponse and encodeState against toBinary", () => {
  it("writes toBinary's bytes for every answer of ASCII text and uint32 values", () => {
    fc.assert(
      fc.property(response(ascii), (m) => {
        const fast = encodeApplyResponse(m);
        expect(fast).toBeDefined();
        expect(hex(fast as Uint8Array)).toBe(hex(toBinary(ApplyResponseSchema, m)));
        if (m.result) {
          const s = encodeState(m.result);
          expect(s).toBeDefined();
          expect(hex(s as Uint8Array)).toBe(hex(toBinary(StateSchema, m.result)));
        }
      }),
      { numRuns: 5_000 },
    );
  });

  it("non-ASCII text: toBinary's bytes or no answer", () => {
    fc.assert(
      fc.property(response(text), (m) => {
        const fast = encodeApplyResponse(m);
        if (fast !== undefined) expect(hex(fast)).toBe(hex(toBinary(ApplyResponseSchema, m)));
      }),
      { numRuns: 5_000 },
    );
  });

  it("values toBinary refuses are left to it; another message is not written", () => {
    for (const odd of [-1, 1.5, 2 ** 32, Number.NaN]) {
      const m = create(ApplyResponseSchema, { result: { routes: [{ dest: "10.0.0.0/24" }] } });
      (m.result?.routes[0] as unknown as Record<string, unknown>).metric = odd;
      expect(encodeApplyResponse(m)).toBeUndefined();
      expect(encodeState(m.result as never)).toBeUndefined();
    }
    // A negative enum is no uint32: that route is toBinary's own, framed here.
    const negative = create(ApplyResponseSchema, { result: { routes: [{ dest: "10.0.0.0/24" }] } });
    (negative.result?.routes[0] as unknown as Record<string, unknown>).type = -1;
    expect(hex(encodeApplyResponse(negative) as Uint8Array)).toBe(
      hex(toBinary(ApplyResponseSchema, negative)),
    );
    expect(encodeApplyResponse(create(StateSchema))).toBeUndefined();
  });
});
