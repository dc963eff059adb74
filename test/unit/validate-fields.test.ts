/**
 * Validation of link names and MAC addresses (validate-fields.ts),
 * table-driven: every invalid value is INVALID_ARGUMENT with a message that
 * names the field and the value.
 */

import { describe, expect, it } from "vitest";
import { validateMac, validateName } from "../../src/agent/validate/validate-fields";
import { BAD_NAMES, invalid } from "../helpers/validate-requests";

describe("validateName", () => {
  it.each(BAD_NAMES)("refuses %s", (_what, name) => {
    invalid(() => validateName("interface.name", name), "interface.name", name);
  });

  it.each(["eth0", "e", "abcdefghijklmno", "eth0.100", "veth_a-b", "0"])("accepts %j", (name) => {
    expect(validateName("x", name)).toBe(name);
  });
});

describe("validateMac", () => {
  it.each(["", "02:00:00:00:00", "02:00:00:00:00:00:00", "zz:00:00:00:00:01", "0200.0000.0001"])(
    "refuses %j",
    (mac) => {
      invalid(() => validateMac("interface.hwAddr", mac), "interface.hwAddr", mac);
    },
  );

  it("refuses the zero MAC and lower-cases the rest", () => {
    invalid(
      () => validateMac("interface.hwAddr", "00:00:00:00:00:00"),
      "interface.hwAddr",
      "00:00:00:00:00:00",
    );
    expect(validateMac("m", "02:AB:cd:EF:00:01")).toBe("02:ab:cd:ef:00:01");
  });
});
