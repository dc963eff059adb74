/** quote / clipText: every value quoted short whatever its length or content. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clipText, QUOTE_PREFIX, quote, utf8Length } from "../../src/ttrpc/quote";

describe("quote", () => {
  it.each([
    ["eth0", '"eth0"'],
    ["", '""'],
    [7, "7"],
    [null, "null"],
    [12n, "12"],
    ["a\nb", '"a\\nb"'],
  ])("%s -> %s", (value, text) => {
    expect(quote(value)).toBe(text);
  });

  it('cuts a long value: `"\\"\\"\\"…" (2100000 bytes)`', () => {
    const q = quote('"'.repeat(2_100_000), 3);
    expect(q).toBe('"\\"\\"\\"…" (2100000 bytes)');
  });

  it("counts UTF-8 bytes, and never splits a surrogate pair", () => {
    const q = quote(`${"a".repeat(QUOTE_PREFIX - 1)}😀${"b".repeat(100)}`);
    expect(q).toBe(`"${"a".repeat(QUOTE_PREFIX - 1)}…" (${QUOTE_PREFIX - 1 + 4 + 100} bytes)`);
    expect(utf8Length("ë😀x")).toBe(Buffer.byteLength("ë😀x"));
  });

  it("is at most a few hundred bytes for any string, including all-escape ones", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 5000 }),
          fc.constantFrom("\x01", "\\", '"', "\u2028").map((c) => c.repeat(100_000)),
        ),
        (s) => {
          expect(Buffer.byteLength(quote(s))).toBeLessThan(6 * QUOTE_PREFIX + 40);
          expect(utf8Length(s)).toBe(Buffer.byteLength(s));
        },
      ),
    );
  });
});

describe("clipText", () => {
  it("keeps a short text as is and cuts a long one to the byte bound, saying its length", () => {
    expect(clipText("service grpc.Nope")).toBe("service grpc.Nope");
    const long = "é".repeat(10_000);
    const c = clipText(long, 1000);
    expect(c.endsWith("… (20000 bytes)")).toBe(true);
    expect(Buffer.byteLength(c)).toBeLessThanOrEqual(1000 + 20);
    expect(clipText("x".repeat(1000), 1000)).toBe("x".repeat(1000));
  });
});
