/**
 * The hand-written ApplyRequest reader (src/wire/state-reader.ts) against
 * protobuf-es: wherever it answers, the answer is fromBinary's message
 * (same fields, same key order); the common shape is read; on mutated
 * encodings and random bytes it answers only where fromBinary does; more
 * entries than the limit are refused as the fromBinary path refuses them.
 */
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { countRepeated } from "../../src/ttrpc/count-repeated";
import { decodeApplyRequest } from "../../src/wire/state-reader";

const ascii = fc.oneof(
  fc.constantFrom("", "10.0.0.0/24", "10.0.0.1", "eth0", "fe80::1", "kernel", "fd00::/64"),
  fc.string({ unit: "binary-ascii", maxLength: 20 }),
);
const text = fc.oneof(
  { weight: 5, arbitrary: ascii },
  fc.string({ unit: "grapheme", maxLength: 6 }),
);
const u32 = fc.oneof(
  fc.constantFrom(0, 1, 4, 100, 253, 254, 1500, 0x7f, 0x80, 0x3fff, 0x4000, 0x7fffffff, 0xffffffff),
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
      type: fc.constantFrom(0, 1, 5, 9, 0x7fffffff, -1),
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
      interfaces: fc.array(
        fc.record({
          mac: str,
          name: str,
          mtu: u32,
          addresses: fc.constant([{ address: "10.0.0.2", prefix: 24 }]),
        }),
        { maxLength: 2 },
      ),
      routes: fc.array(route(str), { maxLength: 6 }),
      rules: fc.array(fc.record({ priority: u32, from: str, table: u32 }), { maxLength: 2 }),
      neighbors: fc.array(fc.record({ address: str, device: str, lladdr: str }), { maxLength: 2 }),
      sysctls: fc.array(fc.record({ key: str, value: str }), { maxLength: 2 }),
      nexthops: fc.array(fc.record({ id: u32, gateway: str, device: str }), { maxLength: 2 }),
    },
    { requiredKeys: [] },
  );
type Init = MessageInitShape<typeof ApplyRequestSchema>;
const request = (str: fc.Arbitrary<string>) =>
  fc
    .record({
      desired: state(str),
      dryRun: fc.boolean(),
      exact: fc.boolean(),
      bestEffort: fc.boolean(),
    })
    .map((r) => toBinary(ApplyRequestSchema, create(ApplyRequestSchema, r as Init)));

/** fromBinary's message or its error. */
function reference(bytes: Uint8Array): { ok: unknown } | { error: string } {
  try {
    return { ok: fromBinary(ApplyRequestSchema, bytes) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Where the fast reader answers, it answers fromBinary's message, key order included. */
function agrees(bytes: Uint8Array): boolean {
  const fast = decodeApplyRequest(bytes);
  if (fast === undefined) return false;
  const want = reference(bytes);
  expect(want).toHaveProperty("ok");
  const ok = (want as { ok: unknown }).ok;
  expect(fast).toStrictEqual(ok);
  expect(JSON.stringify(fast, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))).toBe(
    JSON.stringify(ok, (_k, v) => (typeof v === "bigint" ? `${v}n` : v)),
  );
  return true;
}

describe("decodeApplyRequest against fromBinary", () => {
  it("reads every encoded request of ASCII text, as fromBinary does", () => {
    fc.assert(
      fc.property(request(ascii), (bytes) => {
        // An empty desired state encodes as nothing: left to fromBinary.
        if (bytes.length > 0 && bytes[0] === 0x0a) expect(agrees(bytes)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it("requests with non-ASCII text: fromBinary's message or no answer", () => {
    fc.assert(
      fc.property(request(text), (bytes) => {
        agrees(bytes);
      }),
      { numRuns: 5_000 },
    );
  });

  it("mutated encodings and random bytes: fromBinary's message or no answer", () => {
    const mutation = fc.tuple(
      fc.nat(),
      fc.nat(255),
      fc.constantFrom("set", "insert", "delete", "cut"),
    );
    let answered = 0;
    fc.assert(
      fc.property(
        fc.oneof(request(ascii), fc.uint8Array({ maxLength: 40 })),
        fc.array(mutation, { maxLength: 3 }),
        (start, mutations) => {
          const bytes = [...start];
          for (const [at, value, kind] of mutations) {
            const i = bytes.length === 0 ? 0 : at % bytes.length;
            if (kind === "set") bytes[i] = value;
            else if (kind === "insert") bytes.splice(i, 0, value);
            else if (kind === "delete") bytes.splice(i, 1);
            else bytes.length = i;
          }
          if (agrees(Uint8Array.from(bytes))) answered++;
        },
      ),
      { numRuns: 20_000 },
    );
    // Not vacuous: many mutated requests are still well formed and read here.
    expect(answered).toBeGreaterThan(1000);
  });

  it("refuses more entries than the limit as the fromBinary path does (countRepeated)", () => {
    const bytes = toBinary(
      ApplyRequestSchema,
      create(ApplyRequestSchema, {
        desired: { routes: [{ dest: "10.0.0.0/24" }, { dest: "10.0.1.0/24" }, { mtu: 1400 }] },
      }),
    );
    let reason = "";
    try {
      countRepeated(ApplyRequestSchema, bytes, 2);
    } catch (err) {
      reason = (err as Error).message;
    }
    expect(reason).not.toBe("");
    expect(() => decodeApplyRequest(bytes, 2)).toThrow(reason);
    expect(decodeApplyRequest(bytes, 3)).toStrictEqual(fromBinary(ApplyRequestSchema, bytes));
  });
});
