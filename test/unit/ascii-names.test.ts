/**
 * The name cache of the request decoder: the text of the bytes, as a plain
 * character-by-character read gives it, the same string object for the
 * same bytes, nothing for non-ASCII bytes, and bounded (long names and
 * more names than slots are read correctly, never kept past the bound).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AsciiNames, asciiText, MAX_NAME_BYTES, NAME_SLOTS } from "../../src/ttrpc/ascii-names";

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

describe("AsciiNames", () => {
  it("gives the text of the bytes, the same string again for the same bytes at any offset", () => {
    const names = new AsciiNames();
    const first = names.text(bytes("xxgrpc.Healthyy"), 2, 13);
    expect(first).toBe("grpc.Health");
    const again = names.text(bytes("grpc.Health"), 0, 11);
    expect(again).toBe("grpc.Health");
    // Not only equal: the very string cached (a Map lookup need not hash it again).
    expect(Object.is(first, again)).toBe(true);
    expect(names.text(bytes("grpc.Healti"), 0, 11)).toBe("grpc.Healti");
    expect(names.text(bytes("grpc.Health"), 0, 10)).toBe("grpc.Healt");
    expect(names.text(bytes(""), 0, 0)).toBe("");
  });

  it("answers undefined for a non-ASCII byte, cached or not", () => {
    const names = new AsciiNames();
    expect(names.text(Uint8Array.of(0x61, 0x80, 0x62), 0, 3)).toBeUndefined();
    expect(names.text(Uint8Array.of(0x61, 0x80, 0x62), 0, 3)).toBeUndefined();
    const long = new Uint8Array(MAX_NAME_BYTES + 1).fill(0x61);
    long[MAX_NAME_BYTES] = 0xff;
    expect(names.text(long, 0, long.length)).toBeUndefined();
  });

  it("agrees with a plain read over random names, more of them than slots, long ones too", () => {
    const names = new AsciiNames();
    const name = fc.oneof(
      fc.constantFrom("grpc.Health", "Check", "grpc.AgentService", "UpdateRoutes", "Versio"),
      fc.uint8Array({ maxLength: MAX_NAME_BYTES + 8 }),
      fc.uint8Array({ minLength: MAX_NAME_BYTES - 1, maxLength: MAX_NAME_BYTES + 1 }),
    );
    fc.assert(
      fc.property(fc.array(name, { maxLength: 4 * NAME_SLOTS }), (list) => {
        for (const n of list) {
          const b = typeof n === "string" ? bytes(n) : n;
          expect(names.text(b, 0, b.length)).toBe(asciiText(b, 0, b.length));
        }
      }),
      { numRuns: 500 },
    );
    // Never more than the slots kept.
    const kept = (names as unknown as { bytes: Uint8Array[] }).bytes;
    expect(kept.length).toBeLessThanOrEqual(NAME_SLOTS);
    for (const b of kept) expect(b.length).toBeLessThanOrEqual(MAX_NAME_BYTES);
  });
});
