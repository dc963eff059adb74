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
import { agrees as agreesWith, ascii, mutated, state, text } from "./state-codec-helpers";

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

/** Where the fast reader answers, it answers fromBinary's message, key order included. */
const agrees = (bytes: Uint8Array) => agreesWith(ApplyRequestSchema, decodeApplyRequest, bytes);

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
    let answered = 0;
    fc.assert(
      fc.property(mutated(fc.oneof(request(ascii), fc.uint8Array({ maxLength: 40 }))), (bytes) => {
        if (agrees(bytes)) answered++;
      }),
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
