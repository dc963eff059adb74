/**
 * Apply's attribute lists for interfaces and addresses (validate-attrs.ts,
 * validate-link-attrs.ts): names from vocabulary/link-attrs.ts and
 * address-attrs.ts, values of their grammar, each once, bounded count
 * and bytes (ATTR_LIMITS), and what only makes sense together.
 * INVALID_ARGUMENT names the field and the value; what passes comes out as
 * the model has it (typed peer/scope/noprefixroute/metric, the rest a list).
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LIMITS, validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";

type A = { name: string; value: string };

function invalid(desired: Record<string, unknown>): TtrpcError {
  try {
    validateApply(create(ApplyRequestSchema, { desired }));
  } catch (err) {
    return err as TtrpcError;
  }
  throw new Error("accepted");
}

const MAC = "02:00:00:00:00:01";
const nic = (attrs: A[], addresses: unknown[] = []) => ({
  interfaces: [{ mac: MAC, name: "eth0", addresses, attrs }],
});
const addr = (address: string, prefix: number, attrs: A[]) => nic([], [{ address, prefix, attrs }]);

describe("interface and address attributes", () => {
  it("names the attribute's field and the value", () => {
    const cases: [Record<string, unknown>, string][] = [
      [
        nic([{ name: "colour", value: "red" }]),
        'desired.interfaces[0].attrs[0]: "colour" is not an attribute of its kind',
      ],
      [
        nic([{ name: "txqueuelen", value: "-1" }]),
        'desired.interfaces[0].attrs[0]: "txqueuelen" value "-1" is not a number 0-4294967295',
      ],
      [nic([{ name: "promisc", value: "yes" }]), '"promisc" value "yes" is not one of on, off'],
      [nic([{ name: "alias", value: 'a"b' }]), '"alias" value "a\\"b" is not printable ASCII'],
      [nic([{ name: "alias", value: "x # y" }]), '"alias" value "x # y" is not printable ASCII'],
      [
        addr("10.0.0.2", 24, [{ name: "broadcast", value: "10.0.0.256" }]),
        'desired.interfaces[0].addresses[0].attrs[0]: "broadcast" value "10.0.0.256" is not an IPv4 address',
      ],
      [
        addr("fd00::2", 64, [{ name: "broadcast", value: "10.0.0.255" }]),
        'desired.interfaces[0].addresses[0].attrs[0]: "broadcast" is for IPv4 only',
      ],
      [addr("10.0.0.2", 24, [{ name: "home", value: "on" }]), '"home" is for IPv6 only'],
      [
        addr("10.0.0.2", 24, [{ name: "label", value: "eth0 x" }]),
        '"label" value "eth0 x" is not a label',
      ],
      [
        addr("10.0.0.2", 24, [{ name: "scope", value: "256" }]),
        '"scope" value "256" is not a scope',
      ],
      [
        addr("10.0.0.2", 32, [{ name: "peer", value: "fd00::1" }]),
        'desired.interfaces[0].addresses[0].attrs[0]: "fd00::1" is IPv6 for an IPv4 address',
      ],
      [
        addr("fd00::2", 80, [{ name: "mngtmpaddr", value: "on" }]),
        "desired.interfaces[0].addresses[0].prefix: 80 is not 64: mngtmpaddr needs a /64",
      ],
      [
        addr("10.0.0.2", 24, [{ name: "valid_lft", value: "100" }]),
        'desired.interfaces[0].addresses[0].attrs[0]: "100" is shorter than the preferred lifetime',
      ],
      [
        addr("10.0.0.2", 24, [{ name: "valid_lft", value: "0" }]),
        '"valid_lft" value "0" is not a number 1-',
      ],
      [
        addr("10.0.0.2", 24, [
          { name: "metric", value: "1" },
          { name: "metric", value: "2" },
        ]),
        'desired.interfaces[0].addresses[0].attrs[1]: "metric" is listed twice',
      ],
    ];
    for (const [desired, message] of cases) {
      const err = invalid(desired);
      expect(err.code, message).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toContain(message);
    }
  });

  it("bounds: at most 32 attributes per interface or address, 256 bytes a value", () => {
    expect(LIMITS.attrsPerObject).toBe(32);
    const many = Array.from({ length: 33 }, (_, i) => ({ name: `a${i}`, value: "1" }));
    expect(invalid(nic(many)).message).toBe(
      "desired.interfaces[0].attrs: 33 entries: at most 32 are accepted",
    );
    expect(invalid(addr("10.0.0.2", 24, many)).message).toBe(
      "desired.interfaces[0].addresses[0].attrs: 33 entries: at most 32 are accepted",
    );
    const long = "x".repeat(257);
    expect(invalid(nic([{ name: "alias", value: long }])).message).toContain(
      '"alias" value is longer than 256 bytes',
    );
  });
});

describe("interface and address attributes: what passes", () => {
  it("what passes: typed fields and a canonical list", () => {
    const s = validateApply(
      create(ApplyRequestSchema, {
        desired: {
          interfaces: [
            {
              mac: MAC,
              name: "eth0",
              attrs: [
                { name: "txqueuelen", value: "0" },
                { name: "alias", value: "pod uplink" },
              ],
              addresses: [
                {
                  address: "10.0.0.2",
                  prefix: 32,
                  attrs: [
                    { name: "peer", value: "10.0.0.1" },
                    { name: "scope", value: "253" },
                    { name: "metric", value: "0" },
                    { name: "label", value: "eth0:1" },
                  ],
                },
                {
                  address: "fd00::2",
                  prefix: 64,
                  attrs: [
                    { name: "preferred_lft", value: "0" },
                    { name: "valid_lft", value: "600" },
                    { name: "noprefixroute", value: "on" },
                  ],
                },
              ],
            },
          ],
        },
      }),
    );
    const [l] = s.links;
    expect(l?.attrs).toEqual([
      ["alias", "pod uplink"],
      ["txqueuelen", "0"],
    ]);
    // metric 0 is unset; scope 253 is read back as "link"
    expect(l?.addresses[0]).toEqual({
      family: 4,
      address: "10.0.0.2",
      prefix: 32,
      peer: "10.0.0.1",
      scope: "link",
      attrs: [["label", "eth0:1"]],
    });
    expect(l?.addresses[1]).toEqual({
      family: 6,
      address: "fd00::2",
      prefix: 64,
      noprefixroute: true,
      scope: "global",
      attrs: [
        ["preferred_lft", "0"],
        ["valid_lft", "600"],
      ],
    });
  });
});
