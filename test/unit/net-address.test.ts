/**
 * parseIp's IPv4 fast path against ipaddr.js as the oracle: every dotted
 * quad (with or without leading zeros, octets past 255, parts missing or
 * extra) parses exactly as ipaddr.js's four-part decimal rule says.
 */
import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { parseIp } from "../../src/net/model/address";

const part = fc.oneof(
  fc.integer({ min: 0, max: 300 }).map(String),
  fc.integer({ min: 0, max: 99 }).map((n) => `0${n}`),
  fc.constantFrom("", "x", "-1", "1e2", " 1", "0x1"),
);

describe("parseIp, IPv4", () => {
  it("agrees with ipaddr.js's four-part decimal rule on any dotted text", () => {
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 6 }), (parts) => {
        const text = parts.join(".");
        const got = parseIp(text);
        if (ipaddr.IPv4.isValidFourPartDecimal(text)) {
          const bytes = ipaddr.IPv4.parse(text).toByteArray();
          expect(got).toEqual({ family: 4, bytes, text: bytes.join(".") });
        } else {
          expect(typeof got === "string" || got.family === 6).toBe(true);
        }
      }),
      { numRuns: 20_000 },
    );
  });

  it("reads the edges", () => {
    expect(parseIp("0.0.0.0")).toEqual({ family: 4, bytes: [0, 0, 0, 0], text: "0.0.0.0" });
    expect(parseIp("255.255.255.255")).toEqual({
      family: 4,
      bytes: [255, 255, 255, 255],
      text: "255.255.255.255",
    });
    for (const bad of ["256.0.0.1", "1.2.3", "1.2.3.4.", ".1.2.3", "1..2.3", "1.2.3.4.5", ""]) {
      expect(typeof parseIp(bad)).toBe("string");
    }
  });
});
