/**
 * Validation of a Kata UpdateRoutes request (validate-routes.ts),
 * table-driven: every invalid field is INVALID_ARGUMENT with a message that
 * names the field and the value, clashes name both routes; valid routes
 * come out as model values (host bits masked, default destinations,
 * families, canonical IPv6 text).
 */

import { describe, expect, it } from "vitest";
import { validateRoutes } from "../../src/agent/validate/validate-routes";
import { IPFamily } from "../../src/gen/types_pb";
import { BAD_NAMES, invalid, type RouteInit, route } from "../helpers/validate-requests";

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

/** What validateRoutes fills in for a route that asks for nothing else. */
const base = { onlink: false, mtu: 0, protocol: "boot", type: "unicast", scope: 0 };

describe("validateRoutes: model output", () => {
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
});

describe("validateRoutes: model output, kernel values and duplicates", () => {
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
