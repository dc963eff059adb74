/**
 * Validation of a Kata UpdateInterface request (validate-interface-
 * neighbors.ts), table-driven: every invalid field is INVALID_ARGUMENT
 * with a message that names the field and the value; a valid one comes out
 * as a link spec (lower-case MAC, NOARP, families from the addresses).
 */

import { describe, expect, it } from "vitest";
import { validateInterface } from "../../src/agent/validate/validate-interface-neighbors";
import { IPFamily } from "../../src/gen/types_pb";
import { Code } from "../../src/ttrpc/codes";
import { BAD_NAMES, type InterfaceInit, iface, invalid } from "../helpers/validate-requests";

describe("validateInterface", () => {
  it("refuses a missing interface", () => {
    expect(() => validateInterface(undefined)).toThrow(
      expect.objectContaining({ code: Code.INVALID_ARGUMENT, message: "interface: missing" }),
    );
  });

  it.each(BAD_NAMES.filter(([, n]) => n !== ""))("name with %s", (_what, name) => {
    invalid(() => validateInterface(iface({ name })), "interface.name", name);
  });

  it.each<[string, InterfaceInit, string, unknown]>([
    ["name lo", { name: "lo" }, "interface.name", "lo"],
    ["bad MAC", { hwAddr: "02:00:00:00:00" }, "interface.hwAddr", "02:00:00:00:00"],
    ["empty MAC", { hwAddr: "" }, "interface.hwAddr", ""],
    ["zero MAC", { hwAddr: "00:00:00:00:00:00" }, "interface.hwAddr", "00:00:00:00:00:00"],
    ["mtu 67", { mtu: 67n }, "interface.mtu", 67],
    ["mtu 65536", { mtu: 65536n }, "interface.mtu", "65536"],
    ["mtu 2^64-1", { mtu: 2n ** 64n - 1n }, "interface.mtu", "18446744073709551615"],
    ["devicePath with a newline", { devicePath: "02/00\n" }, "interface.devicePath", "02/00\n"],
    [
      "empty mask",
      { IPAddresses: [{ address: "10.0.0.2", mask: "" }] },
      "interface.IPAddresses[0].mask",
      "",
    ],
    [
      "mask 129",
      { IPAddresses: [{ family: IPFamily.v6, address: "2001:db8::2", mask: "129" }] },
      "interface.IPAddresses[0].mask",
      "129",
    ],
    [
      "mask 33",
      { IPAddresses: [{ address: "10.0.0.2", mask: "33" }] },
      "interface.IPAddresses[0].mask",
      "33",
    ],
    [
      "mask -1",
      { IPAddresses: [{ address: "10.0.0.2", mask: "-1" }] },
      "interface.IPAddresses[0].mask",
      "-1",
    ],
    [
      "mask as a netmask",
      { IPAddresses: [{ address: "10.0.0.2", mask: "255.255.255.0" }] },
      "interface.IPAddresses[0].mask",
      "255.255.255.0",
    ],
    [
      "three-part address",
      { IPAddresses: [{ address: "1.2.3", mask: "24" }] },
      "interface.IPAddresses[0].address",
      "1.2.3",
    ],
    [
      "IPv4-mapped address",
      { IPAddresses: [{ address: "::ffff:1.2.3.4", mask: "96" }] },
      "interface.IPAddresses[0].address",
      "::ffff:1.2.3.4",
    ],
    [
      "zone id",
      { IPAddresses: [{ address: "fe80::1%eth0", mask: "64" }] },
      "interface.IPAddresses[0].address",
      "fe80::1%eth0",
    ],
    [
      "family v6 with an IPv4 address",
      { IPAddresses: [{ family: IPFamily.v6, address: "10.0.0.2", mask: "24" }] },
      "interface.IPAddresses[0].family",
      "v6",
    ],
    [
      "an address twice",
      {
        IPAddresses: [
          { address: "2001:db8::2", mask: "64" },
          { address: "2001:DB8:0::2", mask: "48" },
        ],
      },
      "interface.IPAddresses[1].address",
      "2001:DB8:0::2",
    ],
  ])("%s", (_what, i, field, value) => {
    invalid(() => validateInterface(iface(i)), field, value);
  });
});

describe("validateInterface: the link spec", () => {
  it("gives a spec: lower-case MAC, NOARP from raw_flags, families from the addresses", () => {
    expect(
      validateInterface(
        iface({
          hwAddr: "02:AA:BB:CC:DD:01",
          name: "eth0",
          mtu: 1450n,
          rawFlags: 0x80 | 0x1,
          devicePath: "02/00",
          IPAddresses: [
            { family: IPFamily.v4, address: "10.248.246.146", mask: "28" },
            // The field says v4 (its default); the address says IPv6.
            { family: IPFamily.v4, address: "2001:DB8::146", mask: "64" },
          ],
        }),
      ),
    ).toEqual({
      mac: "02:aa:bb:cc:dd:01",
      name: "eth0",
      mtu: 1450,
      noarp: true,
      addresses: [
        { family: 4, address: "10.248.246.146", prefix: 28 },
        { family: 6, address: "2001:db8::146", prefix: 64 },
      ],
      devicePath: "02/00",
    });
  });

  it("refuses an MTU below IPv6's 1280 when an IPv6 address is listed, naming it", () => {
    const v6 = [
      { address: "10.0.0.2", mask: "24" },
      { address: "fe80::1", mask: "64" },
    ];
    const err = invalid(
      () => validateInterface(iface({ mtu: 1279n, IPAddresses: v6 })),
      "interface.mtu",
      1279,
    );
    expect(err.message).toBe(
      "interface.mtu: 1279 is below 1280, the least MTU IPv6 takes, and interface.IPAddresses[1].address is IPv6 (fe80::1): the kernel drops a link's IPv6 addresses below it",
    );
    // At 1280, with no IPv6 address, or 0 (left as it is): taken.
    expect(validateInterface(iface({ mtu: 1280n, IPAddresses: v6 })).mtu).toBe(1280);
    const v4 = [{ address: "10.0.0.2", mask: "24" }];
    expect(validateInterface(iface({ mtu: 68n, IPAddresses: v4 })).mtu).toBe(68);
    expect(validateInterface(iface({ mtu: 0n, IPAddresses: v6 })).mtu).toBe(0);
    invalid(() => validateInterface(iface({ mtu: 67n, IPAddresses: v4 })), "interface.mtu", 67);
  });

  it("keeps MTU 0 and an empty name as 'leave as is'", () => {
    expect(validateInterface(iface({}))).toMatchObject({ name: "", mtu: 0, noarp: false });
  });
});
