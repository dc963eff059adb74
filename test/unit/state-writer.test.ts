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
import { encodeApplyResponse, encodeState, writePlanAhead } from "../../src/wire/state-writer";
import { ascii, hex, state, text } from "./state-codec-helpers";

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

  it("plan lines written ahead (as Apply does while ip runs): toBinary's bytes, ASCII or not", () => {
    fc.assert(
      fc.property(response(fc.oneof(ascii, text)), (m) => {
        writePlanAhead(m.plan);
        const fast = encodeApplyResponse(m);
        if (
          m.plan.every((l) => [...l].every((c) => c.charCodeAt(0) < 0x80)) &&
          fast === undefined
        ) {
          // Only the rest of the answer may decline (non-ASCII text elsewhere).
          const rest = create(ApplyResponseSchema, { ...m, plan: [] });
          expect(encodeApplyResponse(rest)).toBeUndefined();
        }
        if (fast !== undefined) expect(hex(fast)).toBe(hex(toBinary(ApplyResponseSchema, m)));
      }),
      { numRuns: 3_000 },
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
