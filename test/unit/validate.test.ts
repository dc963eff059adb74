/**
 * Request validation, table-driven: every invalid field is INVALID_ARGUMENT
 * with a message that names the field and the value; valid input comes out
 * as model values (host bits masked, default destinations, families).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { validateMac, validateName } from "../../src/agent/validate/validate-fields";
import {
  validateInterface,
  validateNeighbors,
} from "../../src/agent/validate/validate-interface-neighbors";
import { validateRoutes } from "../../src/agent/validate/validate-routes";
import { ARPNeighborSchema, InterfaceSchema, IPFamily, RouteSchema } from "../../src/gen/types_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";

type RouteInit = MessageInitShape<typeof RouteSchema>;
type InterfaceInit = MessageInitShape<typeof InterfaceSchema>;
type NeighborInit = MessageInitShape<typeof ARPNeighborSchema>;

const route = (r: RouteInit) => create(RouteSchema, { device: "eth0", ...r } as RouteInit);
const iface = (i: InterfaceInit) => create(InterfaceSchema, { hwAddr: "02:00:00:00:00:01", ...i });
const neighbor = (n: NeighborInit) =>
  create(ARPNeighborSchema, {
    toIPAddress: { family: IPFamily.v4, address: "10.0.0.1" },
    device: "eth0",
    lladdr: "02:00:00:00:00:02",
    ...n,
  } as NeighborInit);

/** Runs `fn` and returns the TtrpcError it must throw: INVALID_ARGUMENT naming field and value. */
function invalid(fn: () => unknown, field: string, value: unknown): TtrpcError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(TtrpcError);
  const err = caught as TtrpcError;
  expect(err.code).toBe(Code.INVALID_ARGUMENT);
  expect(err.message.startsWith(`${field}: `), err.message).toBe(true);
  expect(err.message).toContain(JSON.stringify(value));
  return err;
}

const BAD_NAMES: [string, string][] = [
  ["empty", ""],
  ["a newline", "eth0\nroute flush"],
  ["NUL", "eth\u00000"],
  ["a leading '-'", "-eth0"],
  ["a leading '.'", ".eth0"],
  ["16 bytes", "abcdefghijklmnop"],
  ["unicode", "éth0"],
  ["a space", "eth 0"],
  ["a slash", "eth/0"],
  ["a colon", "eth0:1"],
  ["a quote", 'eth"0'],
  ["a '#'", "eth#0"],
];

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

describe("validateRoutes: invalid fields", () => {
  it.each(BAD_NAMES.filter(([, n]) => n !== ""))("device with %s", (_what, device) => {
    invalid(() => validateRoutes([route({ device })]), "routes[0].device", device);
  });

  it.each<[string, RouteInit, string, unknown]>([
    ["empty device", { device: "" }, "routes[0].device", ""],
    ["device lo", { device: "lo" }, "routes[0].device", "lo"],
    ["prefix 33", { dest: "10.0.0.1/33" }, "routes[0].dest", "10.0.0.1/33"],
    ["prefix 129", { dest: "2001:db8::/129" }, "routes[0].dest", "2001:db8::/129"],
    ["prefix not a number", { dest: "10.0.0.0/x" }, "routes[0].dest", "10.0.0.0/x"],
    ["two slashes", { dest: "10.0.0.0/8/8" }, "routes[0].dest", "10.0.0.0/8/8"],
    ["IPv4-mapped IPv6", { dest: "::ffff:1.2.3.4/128" }, "routes[0].dest", "::ffff:1.2.3.4"],
    ["three-part IPv4", { dest: "1.2.3/24" }, "routes[0].dest", "1.2.3"],
    ["zone id", { dest: "fe80::1%eth0/64" }, "routes[0].dest", "fe80::1%eth0"],
    ["a name for a dest", { dest: "default" }, "routes[0].dest", "default"],
    ["bad gateway", { gateway: "1.2.3" }, "routes[0].gateway", "1.2.3"],
    ["gateway with a zone", { gateway: "fe80::1%eth0" }, "routes[0].gateway", "fe80::1%eth0"],
    [
      "gateway of the other family",
      { dest: "10.0.0.0/8", gateway: "fe80::1" },
      "routes[0].gateway",
      "fe80::1",
    ],
    [
      "IPv6 gateway for an IPv6 entry with an IPv4 dest",
      { dest: "2001:db8::/32", gateway: "10.0.0.1" },
      "routes[0].gateway",
      "10.0.0.1",
    ],
    [
      "family v6 with IPv4 addresses",
      { family: IPFamily.v6, dest: "10.0.0.0/8" },
      "routes[0].family",
      "v6",
    ],
    ["family 7", { family: 7 as IPFamily }, "routes[0].family", 7],
    [
      "source prefix",
      { dest: "10.0.0.0/8", source: "10.0.0.2/24" },
      "routes[0].source",
      "10.0.0.2/24",
    ],
    ["source not an IP", { source: "eth0" }, "routes[0].source", "eth0"],
    [
      "source of the other family",
      { dest: "10.0.0.0/8", source: "2001:db8::1" },
      "routes[0].source",
      "2001:db8::1",
    ],
    ["scope 256", { scope: 256 }, "routes[0].scope", 256],
    ["flags 2", { flags: 2 }, "routes[0].flags", 2],
    ["flags 0x100", { flags: 0x100 }, "routes[0].flags", 0x100],
    ["mtu 67", { mtu: 67 }, "routes[0].mtu", 67],
    ["mtu 65536", { mtu: 65536 }, "routes[0].mtu", 65536],
  ])("%s", (_what, r, field, value) => {
    invalid(() => validateRoutes([route(r)]), field, value);
  });

  it("names the index of the bad route", () => {
    invalid(
      () => validateRoutes([route({ dest: "10.0.0.0/8" }), route({ dest: "10.0.0.0/99" })]),
      "routes[1].dest",
      "10.0.0.0/99",
    );
  });

  it("refuses two different routes with one key, naming both", () => {
    const err = invalid(
      () =>
        validateRoutes([
          route({ dest: "10.0.0.0/8", gateway: "192.0.2.1" }),
          route({ dest: "10.0.0.0/8", gateway: "192.0.2.2" }),
        ]),
      "routes[1].dest",
      "10.0.0.0/8",
    );
    expect(err.message).toContain("routes[0]");
  });

  it("sees a clash after masking and default filling", () => {
    invalid(
      () => validateRoutes([route({ dest: "" }), route({ dest: "0.0.0.0/0", scope: 253 })]),
      "routes[1].dest",
      "0.0.0.0/0",
    );
    invalid(
      () =>
        validateRoutes([route({ dest: "10.1.2.3/8" }), route({ dest: "10.0.0.0/8", mtu: 1400 })]),
      "routes[1].dest",
      "10.0.0.0/8",
    );
  });
});

describe("validateRoutes: model output", () => {
  const base = { onlink: false, mtu: 0, protocol: "boot", type: "unicast", scope: 0 };

  it("masks host bits (the Kata agent fails with EINVAL here, #5207)", () => {
    expect(validateRoutes([route({ dest: "192.168.157.204/20" })])[0]?.dst).toBe(
      "192.168.144.0/20",
    );
    expect(validateRoutes([route({ dest: "2001:db8::1:2/64" })])[0]?.dst).toBe("2001:db8::/64");
  });

  it("reads a dest without a prefix as a host route", () => {
    expect(validateRoutes([route({ dest: "10.0.0.1" })])[0]?.dst).toBe("10.0.0.1/32");
    expect(validateRoutes([route({ dest: "2001:db8::1" })])[0]?.dst).toBe("2001:db8::1/128");
  });

  it("fills an empty dest with the family's default", () => {
    expect(validateRoutes([route({ gateway: "10.0.0.1" })])).toEqual([
      { ...base, family: 4, dst: "0.0.0.0/0", gateway: "10.0.0.1", dev: "eth0", metric: 0 },
    ]);
    expect(validateRoutes([route({ gateway: "fe80::1" })])).toEqual([
      { ...base, family: 6, dst: "::/0", gateway: "fe80::1", dev: "eth0", metric: 1024 },
    ]);
    expect(validateRoutes([route({ family: IPFamily.v6 })])[0]).toMatchObject({
      family: 6,
      dst: "::/0",
    });
  });

  it("infers IPv6 from the addresses when the field says v4 (its default)", () => {
    expect(
      validateRoutes([route({ family: IPFamily.v4, dest: "2001:db8::/32", gateway: "fe80::1" })]),
    ).toEqual([
      {
        ...base,
        family: 6,
        dst: "2001:db8::/32",
        gateway: "fe80::1",
        dev: "eth0",
        metric: 1024,
      },
    ]);
  });

  it("keeps scope, onlink (flags 4), mtu, and a preferred source given as /32 or bare", () => {
    expect(
      validateRoutes([
        route({
          dest: "10.248.246.145/32",
          source: "10.248.246.146",
          scope: 253,
        }),
        route({ dest: "10.9.0.0/16", gateway: "169.254.1.1", flags: 4, mtu: 1400 }),
        route({ dest: "10.8.0.0/16", gateway: "10.248.246.145", source: "10.248.246.146/32" }),
      ]),
    ).toEqual([
      {
        ...base,
        family: 4,
        dst: "10.248.246.145/32",
        dev: "eth0",
        prefsrc: "10.248.246.146",
        scope: 253,
        metric: 0,
      },
      {
        ...base,
        family: 4,
        dst: "10.9.0.0/16",
        gateway: "169.254.1.1",
        dev: "eth0",
        metric: 0,
        onlink: true,
        mtu: 1400,
      },
      {
        ...base,
        family: 4,
        dst: "10.8.0.0/16",
        gateway: "10.248.246.145",
        dev: "eth0",
        prefsrc: "10.248.246.146",
        metric: 0,
      },
    ]);
  });

  it("canonicalises IPv6 text", () => {
    const [r] = validateRoutes([
      route({ dest: "2001:DB8:0:0::/48", gateway: "FE80:0::1", source: "2001:db8:0::2" }),
    ]);
    expect(r).toMatchObject({ dst: "2001:db8::/48", gateway: "fe80::1", prefsrc: "2001:db8::2" });
  });

  it("accepts kernel-set state flags and mtu 68 and 65535", () => {
    expect(validateRoutes([route({ flags: 0x10, mtu: 68 })])[0]?.onlink).toBe(false);
    expect(validateRoutes([route({ mtu: 65535 })])[0]?.mtu).toBe(65535);
  });

  it("reads a gateway of 0.0.0.0 or :: as none (the kernel makes a device route of it)", () => {
    expect(validateRoutes([route({ dest: "10.7.0.0/16", gateway: "0.0.0.0" })])[0]).toEqual({
      ...base,
      family: 4,
      dst: "10.7.0.0/16",
      dev: "eth0",
      metric: 0,
    });
    expect(validateRoutes([route({ dest: "2001:db8::/32", gateway: "::" })])[0]?.gateway).toBe(
      undefined,
    );
  });

  it("gives IPv6 routes scope 0 whatever is asked (the kernel keeps universe)", () => {
    expect(validateRoutes([route({ dest: "2001:db8:7::/48", scope: 253 })])[0]?.scope).toBe(0);
    expect(validateRoutes([route({ dest: "10.1.0.0/16", scope: 254 })])[0]?.scope).toBe(254);
  });

  it("keeps one of identical duplicates", () => {
    const r = route({ dest: "10.0.0.0/8", gateway: "192.0.2.1" });
    expect(
      validateRoutes([r, r, route({ dest: "10.0.0.1/8", gateway: "192.0.2.1" })]),
    ).toHaveLength(1);
  });

  it("lets one dest exist once per family", () => {
    expect(validateRoutes([route({ dest: "" }), route({ family: IPFamily.v6 })])).toHaveLength(2);
  });
});

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

describe("validateNeighbors", () => {
  it.each<[string, NeighborInit, string, unknown]>([
    ["missing toIPAddress", { toIPAddress: undefined }, "neighbors[0].toIPAddress", null],
    [
      "bad address",
      { toIPAddress: { address: "1.2.3" } },
      "neighbors[0].toIPAddress.address",
      "1.2.3",
    ],
    [
      "family v6 with IPv4",
      { toIPAddress: { family: IPFamily.v6, address: "10.0.0.1" } },
      "neighbors[0].toIPAddress.family",
      "v6",
    ],
    ["device lo", { device: "lo" }, "neighbors[0].device", "lo"],
    ["empty device", { device: "" }, "neighbors[0].device", ""],
    ["device with a newline", { device: "eth0\nx" }, "neighbors[0].device", "eth0\nx"],
    ["bad lladdr", { lladdr: "02:00" }, "neighbors[0].lladdr", "02:00"],
    ["zero lladdr", { lladdr: "00:00:00:00:00:00" }, "neighbors[0].lladdr", "00:00:00:00:00:00"],
    ["state 3 (two states)", { state: 3 }, "neighbors[0].state", 3],
    ["state 256", { state: 256 }, "neighbors[0].state", 256],
    ["state -1", { state: -1 }, "neighbors[0].state", -1],
    ["empty lladdr, state 0 (permanent)", { lladdr: "", state: 0 }, "neighbors[0].lladdr", ""],
    ["empty lladdr, permanent", { lladdr: "", state: 128 }, "neighbors[0].lladdr", ""],
    ["empty lladdr, reachable", { lladdr: "", state: 2 }, "neighbors[0].lladdr", ""],
    ["flags 1", { flags: 1 }, "neighbors[0].flags", 1],
  ])("%s", (_what, n, field, value) => {
    invalid(() => validateNeighbors([neighbor(n)]), field, value);
  });

  it("maps state 0 to permanent, flags to router/extern_learn, lower-cases lladdr", () => {
    expect(
      validateNeighbors([
        neighbor({ lladdr: "02:AA:00:00:00:02", state: 0, flags: 0x80 }),
        neighbor({
          toIPAddress: { address: "2001:db8::1" },
          state: 4,
          flags: 0x10,
          lladdr: "",
        }),
      ]),
    ).toEqual({
      specs: [
        {
          ip: "10.0.0.1",
          family: 4,
          dev: "eth0",
          lladdr: "02:aa:00:00:00:02",
          nud: "permanent",
          router: true,
          externLearned: false,
        },
        {
          ip: "2001:db8::1",
          family: 6,
          dev: "eth0",
          lladdr: "",
          nud: "stale",
          router: false,
          externLearned: true,
        },
      ],
      skipped: [],
    });
  });

  it("skips multicast entries (IPv4 224/4, IPv6 ff00::/8)", () => {
    expect(
      validateNeighbors([
        neighbor({ toIPAddress: { address: "224.0.0.251" } }),
        neighbor({ toIPAddress: { address: "239.255.255.250" } }),
        neighbor({ toIPAddress: { address: "ff02::1:ff00:1" } }),
        neighbor({ toIPAddress: { address: "240.0.0.1" } }),
      ]),
    ).toMatchObject({
      specs: [{ ip: "240.0.0.1" }],
      skipped: ["224.0.0.251", "239.255.255.250", "ff02::1:ff00:1"],
    });
  });
});
