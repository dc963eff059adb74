/**
 * Front mode's wire-level envelope edits (src/front/forward-envelope.ts),
 * against @bufbuild/protobuf as the oracle: withTimeout changes
 * timeout_nano and nothing else, byte for byte; peekStatus reads a
 * Response's status as a decoder does.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { peekStatus, withTimeout } from "../../src/front/forward-envelope";
import { StatusSchema } from "../../src/gen/google/rpc/status_pb";
import { RequestSchema, ResponseSchema } from "../../src/gen/ttrpc_pb";
import { Code } from "../../src/ttrpc/codes";

const request = (init: Parameters<typeof create<typeof RequestSchema>>[1]) =>
  toBinary(RequestSchema, create(RequestSchema, init));

describe("withTimeout", () => {
  it("replaces timeout_nano and keeps every other byte, in order", () => {
    const fields = {
      service: "grpc.AgentService",
      method: "CreateContainer",
      payload: Uint8Array.of(1, 2, 3),
      metadata: [
        { key: "b", value: "1" },
        { key: "a", value: "2" },
      ],
    };
    const before = request({ ...fields, timeoutNano: 60_000_000_000n });
    const after = withTimeout(before, 59_999_000_123n);
    const decoded = fromBinary(RequestSchema, after);
    expect(decoded.timeoutNano).toBe(59_999_000_123n);
    expect(decoded.metadata.map((m) => [m.key, m.value])).toEqual([
      ["b", "1"],
      ["a", "2"],
    ]);
    // Everything but field 4 is the same bytes: dropping the timeout gives the request without one.
    expect([...withTimeout(before, 0n)]).toEqual([...request(fields)]);
  });

  it("returns the same bytes when there is nothing to change", () => {
    const raw = request({ service: "s", method: "m" });
    expect(withTimeout(raw, 0n)).toBe(raw);
  });

  it("keeps unknown fields and strings that are not UTF-8", () => {
    // service "s", an unknown field 9 (varint), method bytes ff fe (not UTF-8), timeout 5, an unknown group 10.
    const raw = Uint8Array.of(
      0x0a,
      1,
      0x73,
      0x48,
      7,
      0x12,
      2,
      0xff,
      0xfe,
      0x20,
      5,
      0x53,
      0x08,
      1,
      0x54,
    );
    expect([...withTimeout(raw, 300n)]).toEqual([
      0x0a, 1, 0x73, 0x48, 7, 0x12, 2, 0xff, 0xfe, 0x53, 0x08, 1, 0x54, 0x20, 0xac, 0x02,
    ]);
  });

  it("throws on a truncated request", () => {
    expect(() => withTimeout(Uint8Array.of(0x0a, 5, 0x73), 1n)).toThrow(/malformed/);
  });

  it("agrees with the library on any request", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.uint8Array({ maxLength: 64 }),
        fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }),
        fc.array(fc.tuple(fc.string(), fc.string()), { maxLength: 4 }),
        fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }),
        (service, method, payload, timeoutNano, md, next) => {
          const metadata = md.map(([key, value]) => ({ key, value }));
          const raw = request({ service, method, payload, timeoutNano, metadata });
          const out = fromBinary(RequestSchema, withTimeout(raw, next));
          expect(out.timeoutNano).toBe(next);
          expect(out.service).toBe(service);
          expect(out.method).toBe(method);
          expect([...out.payload]).toEqual([...payload]);
          expect(out.metadata.map((m) => [m.key, m.value])).toEqual(md);
        },
      ),
    );
  });
});

describe("peekStatus", () => {
  const response = (status?: { code: number; message: string }, payload = new Uint8Array()) =>
    toBinary(
      ResponseSchema,
      create(ResponseSchema, {
        payload,
        ...(status ? { status: create(StatusSchema, status) } : {}),
      }),
    );

  it.each([
    [undefined, { code: 0, message: "" }],
    [
      { code: 0, message: "" },
      { code: 0, message: "" },
    ],
    [
      { code: Code.NOT_FOUND, message: "Link not found" },
      { code: 5, message: "Link not found" },
    ],
    [
      { code: -3, message: "négatif" },
      { code: -3, message: "négatif" },
    ],
  ])("reads %j", (status, peeked) => {
    expect(peekStatus(response(status, Uint8Array.of(9, 9)))).toEqual(peeked);
  });

  it("cuts a long message for logs", () => {
    expect(peekStatus(response({ code: 2, message: "y".repeat(5000) }), 100).message).toBe(
      "y".repeat(100),
    );
  });

  it("reads malformed bytes as UNKNOWN", () => {
    expect(peekStatus(Uint8Array.of(0x0a, 9, 1)).code).toBe(Code.UNKNOWN);
  });
});
