/**
 * A routing lookup's checks and words (src/net/iproute/route-lookup.ts), the
 * agent's RouteGet validation over them (src/agent/services/lookup-service.ts),
 * route-get's arguments, IP protocol names (route-get's and a rule's), and
 * the probes diff draws from a pod (src/host/compare/probes.ts).
 */
import { describe, expect, it } from "vitest";
import { validateLookups } from "../../src/agent/services/lookup-service";
import { UsageError } from "../../src/host/commands/common";
import { parseRouteGetArgs } from "../../src/host/commands/route-get";
import { drawProbes } from "../../src/host/compare/probes";
import {
  lookupProblem,
  lookupTo,
  lookupWords,
  MAX_LOOKUPS,
} from "../../src/net/iproute/route-lookup";
import { parseRules } from "../../src/net/plan/rules";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { emptyRead } from "./complete-helpers";

describe("lookupProblem", () => {
  const bad: [Parameters<typeof lookupTo>[1] & { to?: string }, string, RegExp][] = [
    [{ to: "" }, "to", /is required/],
    [{ to: "10.0.0.0/8" }, "to", /is not an address/],
    [{ to: "-batch" }, "to", /is not an address/],
    [{ to: "::ffff:1.2.3.4" }, "to", /IPv4-mapped/],
    [{ to: "fe80::1%eth0" }, "to", /zone ids/],
    [{ from: "::1" }, "from", /is IPv6, the destination IPv4/],
    [{ from: "10.0.0.1 iif lo" }, "from", /is not an address/],
    [{ iif: "-batch" }, "iif", /not an interface name/],
    [{ oif: "a".repeat(16) }, "oif", /not an interface name/],
    [{ oif: "eth0 mark 7" }, "oif", /not an interface name/],
    [{ oif: "eth0\n" }, "oif", /not an interface name/],
    [{ sport: 65536 }, "sport", /out of range \(1-65535/],
    [{ dport: -1 }, "dport", /out of range/],
    [{ ipproto: 256 }, "ipproto", /out of range \(1-255/],
    [{ tos: 256 }, "tos", /out of range \(1-255/],
    [{ uid: 4294967295 }, "uid", /out of range/],
    [{ mark: 2 ** 32 }, "mark", /out of range/],
    [{ mark: 1.5 }, "mark", /out of range/],
  ];
  for (const [more, field, why] of bad) {
    it(`refuses ${JSON.stringify(more)}`, () => {
      const p = lookupProblem(lookupTo(more.to ?? "10.1.2.3", more));
      expect(p?.field).toBe(field);
      expect(p?.why).toMatch(why);
    });
  }

  it("words every selector after its keyword, numbers in their own form", () => {
    const l = lookupTo("10.1.2.3", {
      from: "10.9.0.1",
      iif: "eth0",
      oif: "v.a-b_c",
      mark: 255,
      ipproto: 6,
      sport: 5,
      dport: 80,
      uid: 1000,
      tos: 4,
    });
    expect(lookupProblem(l)).toBeUndefined();
    expect(lookupWords(l)).toEqual(
      "10.1.2.3 from 10.9.0.1 iif eth0 oif v.a-b_c mark 0xff ipproto 6 sport 5 dport 80 uid 1000 tos 0x04".split(
        " ",
      ),
    );
    expect(lookupWords(lookupTo("2001:DB8::0:1"))).toEqual(["2001:db8::1"]);
  });
});

describe("validateLookups (RouteGet)", () => {
  it("names the lookup, the field and the value", () => {
    const err = (() => {
      try {
        validateLookups([lookupTo("10.0.0.1"), lookupTo("10.0.0.1", { iif: "-batch" })]);
      } catch (e) {
        return e as TtrpcError;
      }
    })();
    expect(err).toBeInstanceOf(TtrpcError);
    expect(err?.code).toBe(Code.INVALID_ARGUMENT);
    expect(err?.message).toMatch(/^lookups\[1\]\.iif: "-batch" is not an interface name/);
  });

  it(`takes ${MAX_LOOKUPS} lookups and refuses one more`, () => {
    expect(validateLookups(Array(MAX_LOOKUPS).fill(lookupTo("10.0.0.1")))).toHaveLength(
      MAX_LOOKUPS,
    );
    expect(() => validateLookups(Array(MAX_LOOKUPS + 1).fill(lookupTo("10.0.0.1")))).toThrow(
      /^lookups: "1001 lookups" are more than 1000 in one call/,
    );
  });
});

describe("route-get's arguments", () => {
  it("reads the lookup as ip route get does", () => {
    const { lookup } = parseRouteGetArgs([
      "--netns",
      "p",
      "10.1.2.3",
      "tos",
      "0x04",
      "ipproto",
      "tcp",
      "dport",
      "443",
      "mark",
      "0x10",
    ]);
    expect(lookup).toEqual(lookupTo("10.1.2.3", { tos: 4, ipproto: 6, dport: 443, mark: 16 }));
  });
  const bad: [string[], RegExp][] = [
    [["10.1.2.3"], /--netns is required/],
    [["--netns", "p"], /destination ADDRESS is required/],
    [["--netns", "p", "10.1.2.3", "via", "x"], /unexpected argument "via"/],
    [["--netns", "p", "10.1.2.3", "tos"], /tos needs a value/],
    [["--netns", "p", "10.1.2.3", "sport", "99999"], /sport 99999 is out of range/],
    [["--netns", "p", "10.1.2.3", "ipproto", "bogus"], /ipproto "bogus": not a number/],
    // Names are the table's own, not what every object inherits.
    [["--netns", "p", "10.1.2.3", "ipproto", "toString"], /ipproto "toString": not a number/],
    [["--netns", "p", "10.1.2.3", "ipproto", "constructor"], /ipproto "constructor": not a/],
    [["--netns", "p", "10.1.2.3", "ipproto", "__proto__"], /ipproto "__proto__": not a number/],
    [["--netns", "p", "10.1.2.3", "oif", "-batch"], /oif "-batch" is not an interface name/],
    [["--netns", "p", "10.1.2.3", "uid", "1", "uid", "2"], /uid given twice/],
    [["--netns", "p", "--batch", "10.1.2.3"], /unknown option --batch/],
  ];
  for (const [args, why] of bad) {
    it(`refuses ${args.join(" ")}`, () => {
      expect(() => parseRouteGetArgs(args)).toThrow(UsageError);
      expect(() => parseRouteGetArgs(args)).toThrow(why);
    });
  }
});

describe("a rule's ipproto read from ip -j rule", () => {
  it("is a name of the protocol table's own: an inherited property is no name, kept as `other`", () => {
    for (const name of ["toString", "constructor", "__proto__"]) {
      const [r] = parseRules([{ priority: 7, src: "all", ipproto: name, table: "100" }], 4);
      expect(r?.other, name).toEqual([`ipproto=${JSON.stringify(name)}`]);
      expect(r?.attrs, name).toBeUndefined();
    }
    const [tcp] = parseRules([{ priority: 7, src: "all", ipproto: "tcp", table: "100" }], 4);
    expect(tcp?.attrs).toEqual([["ipproto", "6"]]);
  });
});

describe("drawProbes", () => {
  const pod = emptyRead({
    routes: [
      {
        family: "inet",
        dst: "100.64.0.0/12",
        tos: "0x04",
        gateway: "10.9.0.2",
        dev: "eth0",
        table: "main",
      },
      { family: "inet6", dst: "default", dev: "eth0", table: "main", from: "2001:db8:1::/64" },
    ],
    rules: [
      {
        family: "inet",
        priority: 100,
        src: "10.9.0.0",
        srclen: 24,
        ipproto: "tcp",
        dport: "1000-2000",
        uid_start: 100,
        uid_end: 200,
        fwmark: "0x10",
        fwmask: "0xf0",
        table: "100",
      },
    ],
  });

  it("draws lookups in and beside each prefix, with the selectors the routes and rules name", () => {
    const words = drawProbes(pod, MAX_LOOKUPS).map((l) => lookupWords(l).join(" "));
    expect(words).toContain("100.64.0.1");
    expect(words).toContain("100.64.0.1 tos 0x04");
    expect(words).toContain("100.79.255.255");
    expect(words).toContain("100.63.255.255");
    expect(words).toContain("100.80.0.0 tos 0x04");
    expect(words).toContain("::1 from 2001:db8:1::1");
    expect(words).toContain("::1 from 2001:db8:0:ffff:ffff:ffff:ffff:ffff");
    expect(
      words.some((w) => /from 10\.9\.0\.1 mark 0x10 ipproto 6 dport 2000 uid 100$/.test(w)),
    ).toBe(true);
    expect(
      words.some((w) => /from 10\.9\.1\.0 mark 0x10 ipproto 6 dport 2000 uid 100$/.test(w)),
    ).toBe(true);
    // The mark with the mask's lowest bit flipped: 0x10 ^ 0x10, no mark.
    expect(words.some((w) => /from 10\.9\.0\.1 ipproto 6 dport 2000 uid 100$/.test(w))).toBe(true);
    expect(words.some((w) => /dport 2001 uid 100$/.test(w))).toBe(true);
    expect(words.some((w) => /dport 2000 uid 201$/.test(w))).toBe(true);
    expect(new Set(words).size).toBe(words.length);
    for (const l of drawProbes(pod, MAX_LOOKUPS)) expect(lookupProblem(l)).toBeUndefined();
  });

  it("asks a link-local destination through the route's link, as traffic to one names its zone", () => {
    const links = emptyRead({
      routes: [
        { family: "inet6", dst: "fe80::/64", dev: "eth2", table: "main", protocol: "kernel" },
        {
          family: "inet6",
          type: "local",
          dst: "fe80::5",
          dev: "eth0",
          table: "local",
          protocol: "kernel",
        },
        { family: "inet6", type: "local", dst: "::1", dev: "lo", table: "local" },
        { family: "inet6", dst: "2001:db8::/64", dev: "eth2", table: "main" },
      ],
      rules: [{ family: "inet6", priority: 100, src: "all", fwmark: "0x5", table: "main" }],
    });
    const words = drawProbes(links, MAX_LOOKUPS).map((l) => lookupWords(l).join(" "));
    expect(words).toContain("fe80::1 oif eth2");
    expect(words).toContain("fe80::ffff:ffff:ffff:ffff oif eth2");
    expect(words).toContain("fe80::5 oif eth0");
    expect(words).toContain("fe80::4 oif eth0");
    // A rule with no destination of its own is asked at those, zones kept.
    expect(words.some((w) => /^fe80::1 .*oif eth2.* mark 0x5$/.test(w))).toBe(true);
    // Beside fe80::/64 and beyond fe80::/10, or through lo: no zone.
    expect(words).toContain("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    expect(words).toContain("::1");
    expect(words).toContain("2001:db8::1");
    expect(words.filter((w) => /^fe[89ab]/.test(w) && !/ oif /.test(w))).toEqual([]);
  });

  it("meets a rule's ipproto by any name ip prints for it (netbase's), as a number", () => {
    const named = (ipproto: string) =>
      drawProbes(
        emptyRead({
          routes: [{ family: "inet", dst: "10.70.0.0/16", dev: "eth0", table: "main" }],
          rules: [
            { family: "inet", priority: 100, src: "10.9.0.0", srclen: 24, ipproto, table: "100" },
          ],
        }),
        MAX_LOOKUPS,
      ).map((l) => lookupWords(l).join(" "));
    expect(named("l2tp").some((w) => / ipproto 115$/.test(w))).toBe(true);
    expect(named("ospf").some((w) => / ipproto 89$/.test(w))).toBe(true);
    expect(named("tcp").some((w) => / ipproto 6$/.test(w))).toBe(true);
    // Not a name: no protocol to meet.
    expect(named("toString").some((w) => / ipproto /.test(w))).toBe(false);
  });

  it("keeps to the bound with an even spread, the same each time", () => {
    const all = drawProbes(pod, MAX_LOOKUPS);
    const five = drawProbes(pod, 5);
    expect(five).toHaveLength(5);
    expect(five).toEqual(drawProbes(pod, 5));
    expect(five[0]).toEqual(all[0]);
  });
});
