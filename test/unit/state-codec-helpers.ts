/**
 * For the hand-written State codecs' tests (state-reader, state-writer,
 * client-codecs): random netagent.v1 values (text that is ASCII or not,
 * uint32 edge values, routes of the common shape and off it, whole states,
 * unknown fields put into a message, byte mutations of an encoding) and
 * the check that a fast reader's answer is fromBinary's.
 */
import { type DescMessage, fromBinary, type UnknownField } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import { expect } from "vitest";

export const ascii = fc.oneof(
  fc.constantFrom("", "10.0.0.0/24", "10.0.0.1", "eth0", "fe80::1", "kernel", "fd00::/64"),
  fc.string({ unit: "binary-ascii", maxLength: 20 }),
);
export const text = fc.oneof(
  { weight: 5, arbitrary: ascii },
  fc.string({ unit: "grapheme", maxLength: 6 }),
);
export const u32 = fc.oneof(
  fc.constantFrom(0, 1, 4, 100, 253, 254, 1500, 0x7f, 0x80, 0x3fff, 0x4000, 0x7fffffff, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
);
export const route = (str: fc.Arbitrary<string>) =>
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
export const state = (str: fc.Arbitrary<string>) =>
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

/** An unknown field (number 99-2047, any wire type toBinary writes raw) for a message's $unknown. */
export const unknownField: fc.Arbitrary<UnknownField> = fc.oneof(
  fc.record({
    no: fc.integer({ min: 99, max: 2047 }),
    wireType: fc.constant(WireType.Varint),
    data: fc.constantFrom(Uint8Array.of(0), Uint8Array.of(1), Uint8Array.of(0xff, 0x01)),
  }),
  fc.record({
    no: fc.integer({ min: 99, max: 2047 }),
    wireType: fc.constant(WireType.LengthDelimited),
    data: fc.constantFrom(Uint8Array.of(0), Uint8Array.of(2, 0x61, 0x62)),
  }),
);

/**
 * Puts `field` into the $unknown of the message that `path` names in `root`
 * (keys and list indexes, e.g. ["result", "routes", 0]); a path that names
 * nothing changes nothing.
 */
export function addUnknown(root: object, path: readonly (string | number)[], field: UnknownField) {
  let at: unknown = root;
  for (const key of path) at = (at as Record<string | number, unknown> | undefined)?.[key];
  if (typeof at !== "object" || at === null || !("$typeName" in at)) return;
  const m = at as { $unknown?: UnknownField[] };
  m.$unknown = [...(m.$unknown ?? []), field];
}

/** Where in a State an unknown field goes, as a path below it. */
export const statePlace = fc.oneof(
  fc.constant([] as (string | number)[]),
  fc.tuple(
    fc.constantFrom("interfaces", "routes", "rules", "neighbors", "sysctls", "nexthops"),
    fc.nat(5),
  ),
);

const mutation = fc.tuple(fc.nat(), fc.nat(255), fc.constantFrom("set", "insert", "delete", "cut"));

/** Up to three mutations (set, insert or delete a byte, cut the rest) of an encoding. */
export const mutated = (start: fc.Arbitrary<Uint8Array>) =>
  fc.tuple(start, fc.array(mutation, { maxLength: 3 })).map(([from, mutations]) => {
    const bytes = [...from];
    for (const [at, value, kind] of mutations) {
      const i = bytes.length === 0 ? 0 : at % bytes.length;
      if (kind === "set") bytes[i] = value;
      else if (kind === "insert") bytes.splice(i, 0, value);
      else if (kind === "delete") bytes.splice(i, 1);
      else bytes.length = i;
    }
    return Uint8Array.from(bytes);
  });

export const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/** fromBinary's message or its error. */
function reference(schema: DescMessage, bytes: Uint8Array): { ok: unknown } | { error: string } {
  try {
    return { ok: fromBinary(schema, bytes) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const json = (v: unknown) =>
  JSON.stringify(v, (_k, x) =>
    typeof x === "bigint" ? `${x}n` : x instanceof Uint8Array ? hex(x) : x,
  );

/**
 * Whether `fast` answered `bytes`; where it did, its answer is fromBinary's
 * message of `schema` (deep and strict, key order included).
 */
export function agrees(
  schema: DescMessage,
  fast: (bytes: Uint8Array) => unknown,
  bytes: Uint8Array,
): boolean {
  const got = fast(bytes);
  if (got === undefined) return false;
  const want = reference(schema, bytes);
  expect(want).toHaveProperty("ok");
  const ok = (want as { ok: unknown }).ok;
  expect(got).toStrictEqual(ok);
  expect(json(got)).toBe(json(ok));
  return true;
}
