/**
 * The hand-written HealthCheckResponse writer against toBinary: wherever it
 * answers, the bytes are toBinary's; any value it does not take (out of
 * 0-127, not an integer, not a number, unknown fields, another message) is
 * left to toBinary (undefined), so toBinary's bytes or its error stand.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HealthCheckResponseSchema, VersionCheckResponseSchema } from "../../src/gen/health_pb";
import { FAST_ENCODERS } from "../../src/wire/fast-codecs";
import { encodeHealthCheckResponse } from "../../src/wire/health-writer";

describe("HealthCheckResponse writer", () => {
  it("is the call runner's writer for the type", () => {
    expect(FAST_ENCODERS.get(HealthCheckResponseSchema.typeName)).toBe(encodeHealthCheckResponse);
  });

  it("writes toBinary's bytes for every status it takes, and takes 0-127", () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (status) => {
        const m = create(HealthCheckResponseSchema, { status });
        const mine = encodeHealthCheckResponse(m);
        if (status >= 0 && status <= 127) expect(mine).toBeDefined();
        if (mine !== undefined) expect(mine).toEqual(toBinary(HealthCheckResponseSchema, m));
      }),
      { numRuns: 2000 },
    );
    for (let status = 0; status <= 127; status++) {
      const m = create(HealthCheckResponseSchema, { status });
      expect(encodeHealthCheckResponse(m)).toEqual(toBinary(HealthCheckResponseSchema, m));
    }
  });

  it("leaves odd values, unknown fields and other messages to toBinary", () => {
    for (const status of [128, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "1", undefined]) {
      // biome-ignore lint/suspicious/noExplicitAny: a handler may return a wrong shape.
      const m = { $typeName: HealthCheckResponseSchema.typeName, status } as any;
      expect(encodeHealthCheckResponse(m)).toBeUndefined();
    }
    // A message read with an unknown field keeps it; toBinary writes it back.
    const withUnknown = fromBinary(
      HealthCheckResponseSchema,
      Uint8Array.of(0x08, 0x01, 0x10, 0x05),
    );
    expect(encodeHealthCheckResponse(withUnknown)).toBeUndefined();
    const other = create(VersionCheckResponseSchema, { grpcVersion: "1" });
    expect(encodeHealthCheckResponse(other)).toBeUndefined();
  });
});
