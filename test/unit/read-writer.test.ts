/**
 * The hand-written ReadResponse writer (src/wire/read-writer.ts) against
 * toBinary: its bytes are toBinary's for every answer, ASCII or not (an
 * element it does not write by hand is toBinary's, in its place), and the
 * bytes measured for Read's size check are the bytes the encoder sends.
 */
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReadResponseSchema } from "../../src/gen/network_pb";
import { encodeReadResponse, readResponseBytes } from "../../src/wire/read-writer";
import { ascii, hex, text } from "./state-codec-helpers";

type Init = MessageInitShape<typeof ReadResponseSchema>;
const file = (str: fc.Arbitrary<string>) => fc.record({ path: str, value: str });
const answer = (str: fc.Arbitrary<string>) =>
  fc
    .record({
      listings: fc.array(fc.record({ name: str, output: str, error: str }), { maxLength: 4 }),
      sysctls: fc.array(file(str), { maxLength: 20 }),
      freshSysctls: fc.array(file(str), { maxLength: 20 }),
    })
    .map((r) => create(ReadResponseSchema, r as Init));

describe("the ReadResponse writer against toBinary", () => {
  it("writes toBinary's bytes for every answer of ASCII text, by hand", () => {
    fc.assert(
      fc.property(answer(ascii), (m) => {
        const fast = encodeReadResponse(m);
        expect(fast).toBeDefined();
        expect(hex(fast as Uint8Array)).toBe(hex(toBinary(ReadResponseSchema, m)));
      }),
      { numRuns: 3_000 },
    );
  });

  it("writes toBinary's bytes with any text (non-ASCII elements by toBinary, in place)", () => {
    fc.assert(
      fc.property(answer(fc.oneof(ascii, text)), (m) => {
        const bytes = readResponseBytes(m);
        expect(hex(bytes)).toBe(hex(toBinary(ReadResponseSchema, m)));
        expect(encodeReadResponse(m)).toBe(bytes);
      }),
      { numRuns: 3_000 },
    );
  });

  it("a Read's shape: long outputs, escapes, a value of several lines, an empty one", () => {
    const m = create(ReadResponseSchema, {
      listings: [
        { name: "link", output: `[${'{"ifname":"eth0","alias":"a\\"b\\\\c"},'.repeat(5000)}{}]` },
        { name: "nexthop", error: "Error: ipv4: Nexthop group not supported." },
        { name: "route", output: '[{"dst":"default","dev":"ünïcode"}]' },
      ],
      sysctls: [
        { path: "ipv4/route/gc_interval", value: "60" },
        { path: "ipv6/conf/eth0/stable_secret", value: "" },
        { path: "unix/max_dgram_qlen", value: "512\n512" },
      ],
      freshSysctls: [{ path: "ipv4/ip_forward", value: "0" }],
    });
    const bytes = readResponseBytes(m);
    expect(hex(bytes)).toBe(hex(toBinary(ReadResponseSchema, m)));
    expect(fromBinary(ReadResponseSchema, bytes)).toEqual(m);
  });

  it("declines what is not a ReadResponse", () => {
    expect(encodeReadResponse({ $typeName: "netagent.v1.State" })).toBeUndefined();
  });
});
