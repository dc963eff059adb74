/**
 * Apply's attribute lists for rules (validate-attrs.ts, validate-rule-attrs.ts):
 * names from the table, values of their grammar, each name once, bounded
 * count and bytes; an action attribute alone and instead of action/table.
 * INVALID_ARGUMENT names the attribute's field and the value; what passes
 * comes out canonical (sorted, unset values left out).
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LIMITS, validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";

function invalid(desired: Record<string, unknown>): TtrpcError {
  try {
    validateApply(create(ApplyRequestSchema, { desired }));
  } catch (err) {
    return err as TtrpcError;
  }
  throw new Error("accepted");
}

const rule = (attrs: { name: string; value: string }[], over: Record<string, unknown> = {}) => ({
  rules: [{ priority: 5, table: 100, attrs, ...over }],
});

describe("rule attributes", () => {
  it("names the attribute's field and the value", () => {
    const cases: [Record<string, unknown>, string][] = [
      [
        rule([{ name: "color", value: "red" }]),
        'desired.rules[0].attrs[0]: "color" is not an attribute of its kind',
      ],
      [
        rule([{ name: "dport", value: "x" }]),
        'desired.rules[0].attrs[0]: "dport" value "x" is not a port or range',
      ],
      [rule([{ name: "sport", value: "20-10" }]), '"sport" value "20-10" is not a port or range'],
      [rule([{ name: "dport", value: "70000" }]), '"dport" value "70000"'],
      [rule([{ name: "ipproto", value: "tcp" }]), '"ipproto" value "tcp" is not a number 0-255'],
      [rule([{ name: "tos", value: "16" }]), '"tos" value "16" is not a TOS'],
      [rule([{ name: "protocol", value: "my proto" }]), '"protocol" value "my proto"'],
      [
        rule([{ name: "goto", value: "0" }], { table: 0 }),
        '"goto" value "0" is not a number 1-4294967295',
      ],
      [
        rule([
          { name: "dport", value: "80" },
          { name: "dport", value: "81" },
        ]),
        'desired.rules[0].attrs[1]: "dport" is listed twice',
      ],
      [
        rule(
          [
            { name: "goto", value: "7" },
            { name: "nop", value: "on" },
          ],
          { table: 0 },
        ),
        'desired.rules[0].attrs: "goto,nop" are two actions',
      ],
      [
        rule([{ name: "goto", value: "7" }]),
        "desired.rules[0].table: 100 is given with the action attribute goto",
      ],
      [
        rule([{ name: "nop", value: "on" }], { table: 0, action: 1 }),
        "desired.rules[0].action: 1 is given with the action attribute nop",
      ],
    ];
    for (const [desired, text] of cases) {
      const err = invalid(desired);
      expect(err.code, err.message).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toContain(text);
    }
  });

  it("bounds the count of attributes and the bytes of a value", () => {
    const many = Array.from({ length: LIMITS.attrsPerObject + 1 }, () => ({
      name: "nop",
      value: "on",
    }));
    expect(invalid(rule(many, { table: 0 })).message).toContain(
      `desired.rules[0].attrs: ${LIMITS.attrsPerObject + 1} entries: at most ${LIMITS.attrsPerObject}`,
    );
    const long = "1".repeat(LIMITS.attrValueBytes + 1);
    expect(invalid(rule([{ name: "goto", value: long }], { table: 0 })).message).toContain(
      `value is longer than ${LIMITS.attrValueBytes} bytes`,
    );
  });

  it("comes out canonical: sorted, unset values left out, an action attribute without a table", () => {
    const d = validateApply(
      create(ApplyRequestSchema, {
        desired: {
          rules: [
            {
              priority: 5,
              table: 100,
              attrs: [
                { name: "sport", value: "1000-2000" },
                { name: "protocol", value: "unspec" },
                { name: "ipproto", value: "6" },
              ],
            },
            { priority: 6, attrs: [{ name: "goto", value: "7" }] },
          ],
        },
      }),
    );
    expect(d.rules[0]?.attrs).toEqual([
      ["ipproto", "6"],
      ["sport", "1000-2000"],
    ]);
    expect(d.rules[0]?.table).toBe(100);
    expect(d.rules[1]).toMatchObject({ action: "lookup", table: 0, attrs: [["goto", "7"]] });
  });
});
