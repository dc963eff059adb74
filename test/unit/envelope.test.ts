import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RequestSchema, ResponseSchema } from "../../src/gen/ttrpc_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { decodeRequest, encodeOkResponseFrame } from "../../src/ttrpc/envelope";
import { encodeFrame, FrameType, MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import { encodeOkResponse } from "../../src/ttrpc/status";

const LIMIT = 100_000;

/** What the library makes of `bytes`, in decodeRequest's shape, or the error. */
function viaLibrary(bytes: Uint8Array) {
  try {
    const r = fromBinary(RequestSchema, bytes);
    return {
      service: r.service,
      method: r.method,
      payload: [...r.payload],
      timeoutNano: r.timeoutNano,
      metadata: r.metadata.map(({ key, value }) => ({ key, value })),
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function viaEnvelope(bytes: Uint8Array) {
  try {
    const r = decodeRequest(bytes, LIMIT);
    return { ...r, payload: [...r.payload] };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const request = fc.record({
  service: fc.oneof(fc.constantFrom("grpc.Health", "grpc.AgentService"), fc.string()),
  method: fc.oneof(fc.constantFrom("Check", "UpdateRoutes"), fc.string({ unit: "binary" })),
  payload: fc.uint8Array({ maxLength: 300 }),
  timeoutNano: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  metadata: fc.array(fc.record({ key: fc.string(), value: fc.string({ unit: "binary" }) }), {
    maxLength: 4,
  }),
});

describe("envelope: decodeRequest agrees with @bufbuild/protobuf", () => {
  it("on every well-formed request (fast path and fallback alike)", () => {
    fc.assert(
      fc.property(request, (r) => {
        const bytes = toBinary(RequestSchema, create(RequestSchema, r));
        expect(viaEnvelope(bytes)).toEqual(viaLibrary(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it("on truncated, mutated and appended-to requests (same value or both fail)", () => {
    fc.assert(
      fc.property(
        request,
        fc.nat(),
        fc.uint8Array({ minLength: 1, maxLength: 6 }),
        fc.constantFrom("cut", "flip", "append"),
        (r, at, junk, how) => {
          const good = toBinary(RequestSchema, create(RequestSchema, r));
          const i = good.length ? at % good.length : 0;
          let bytes: Uint8Array;
          if (how === "cut") bytes = good.subarray(0, i);
          else if (how === "append") bytes = Uint8Array.from([...good, ...junk]);
          else {
            bytes = Uint8Array.from(good);
            if (bytes.length) bytes[i] = (bytes[i] as number) ^ (junk[0] as number);
          }
          const lib = viaLibrary(bytes);
          const ours = viaEnvelope(bytes);
          if ("error" in lib) expect(ours).toHaveProperty("error");
          else expect(ours).toEqual(lib);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("reads what a Go client sends: service, method, payload, timeout, metadata", () => {
    const bytes = toBinary(
      RequestSchema,
      create(RequestSchema, {
        service: "grpc.Health",
        method: "Check",
        payload: Uint8Array.of(1, 2),
        timeoutNano: 5_000_000_000n,
        metadata: [{ key: "k", value: "v" }],
      }),
    );
    expect(viaEnvelope(bytes)).toEqual({
      service: "grpc.Health",
      method: "Check",
      payload: [1, 2],
      timeoutNano: 5_000_000_000n,
      metadata: [{ key: "k", value: "v" }],
    });
  });

  it("bounds metadata entries like every other repeated field", () => {
    const bytes = toBinary(
      RequestSchema,
      create(RequestSchema, { metadata: Array.from({ length: 5 }, () => ({ key: "k" })) }),
    );
    expect(() => decodeRequest(bytes, 4)).toThrow(/metadata: more than 4 entries/);
    expect(decodeRequest(bytes, 5).metadata).toHaveLength(5);
  });
});

describe("envelope: encodeOkResponseFrame", () => {
  it("is byte for byte the library's Response in encodeFrame's frame", () => {
    fc.assert(
      fc.property(fc.nat(0xffff_ffff), fc.uint8Array({ maxLength: 600 }), (id, payload) => {
        const expected = encodeFrame(id, FrameType.Response, 0, encodeOkResponse(payload));
        expect(encodeOkResponseFrame(id, payload)).toEqual(expected);
        const body = encodeOkResponseFrame(id, payload).subarray(10);
        expect([...fromBinary(ResponseSchema, body).payload]).toEqual([...payload]);
      }),
      { numRuns: 500 },
    );
  });

  it("answers RESOURCE_EXHAUSTED past the frame limit, exactly at it still encodes", () => {
    const fits = MAX_DATA_LENGTH - 3 - 4; // tag, empty status, tag, 4-byte length
    expect(encodeOkResponseFrame(1, new Uint8Array(fits)).length).toBe(10 + MAX_DATA_LENGTH);
    try {
      encodeOkResponseFrame(1, new Uint8Array(fits + 1));
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(TtrpcError);
      expect((err as TtrpcError).code).toBe(Code.RESOURCE_EXHAUSTED);
    }
  });
});
