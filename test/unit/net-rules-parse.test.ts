/**
 * Policy rules read and written: the parser of `ip -json rule` (recorded
 * from a real namespace) and the renderer of rule lines for `ip -batch`.
 */

import { describe, expect, it } from "vitest";
import { DEFAULT_RULES, parseRules, type Rule, renderRule } from "../../src/net/plan/rules";

// Recorded: ip -d -j rule / ip -6 -d -j rule, iproute2 6.1, Linux 6.18 (tun9 absent: detached).
const V4 = [
  { priority: 0, src: "all", table: "local", protocol: "kernel" },
  {
    priority: 100,
    not: null,
    src: "10.1.0.0",
    srclen: 16,
    dst: "10.2.0.0",
    dstlen: 24,
    fwmark: "0x10",
    fwmask: "0xff",
    iif: "eth0",
    table: "200",
    protocol: "unspec",
  },
  { priority: 101, src: "all", oif: "eth0", action: "blackhole", protocol: "unspec" },
  { priority: 102, src: "all", fwmark: "0x7", action: "unreachable", protocol: "unspec" },
  { priority: 105, src: "all", table: "main", suppress_prefixlen: 0, protocol: "unspec" },
  {
    priority: 110,
    src: "10.0.0.0",
    srclen: 8,
    ipproto: "tcp",
    sport_start: 1000,
    sport_end: 2000,
    dport: 80,
    table: "100",
    protocol: "unspec",
  },
  {
    priority: 111,
    src: "all",
    tos: "0x10",
    uid_start: 1000,
    uid_end: 2000,
    table: "100",
    protocol: "unspec",
  },
  { priority: 112, src: "all", goto: 120, unresolved: null, protocol: "unspec" },
  { priority: 113, src: "all", nop: null, protocol: "unspec" },
  { priority: 114, src: "all", table: "main", suppress_ifgroup: "5", protocol: "unspec" },
  { priority: 115, src: "all", l3mdev: null, protocol: "unspec" },
  {
    priority: 116,
    src: "all",
    table: "100",
    flow_from: "3",
    flow_to: "4",
    protocol: "unspec",
  },
  {
    priority: 117,
    src: "all",
    iif: "tun9",
    iif_detached: null,
    table: "100",
    protocol: "static",
  },
  { priority: 32765, src: "10.248.246.146", table: "100", protocol: "unspec" },
  { priority: 32766, src: "all", table: "main", protocol: "kernel" },
  { priority: 32767, src: "all", table: "default", protocol: "kernel" },
];
const V6 = [
  { priority: 0, src: "all", table: "local", protocol: "kernel" },
  { priority: 104, src: "2001:db8::", srclen: 32, table: "300", protocol: "unspec" },
  {
    priority: 118,
    src: "all",
    oif: "tun9",
    oif_detached: null,
    ipproto: "ipv6-icmp",
    table: "100",
    protocol: "unspec",
  },
  { priority: 32766, src: "all", table: "main", protocol: "kernel" },
];

const byPriority = (rules: readonly Rule[], p: number) => rules.find((r) => r.priority === p);

describe("parseRules", () => {
  const v4 = parseRules(V4, 4);
  const v6 = parseRules(V6, 6);

  it("reads selectors, actions and tables", () => {
    expect(byPriority(v4, 100)).toEqual({
      family: 4,
      priority: 100,
      not: true,
      src: "10.1.0.0/16",
      dst: "10.2.0.0/24",
      iif: "eth0",
      fwmark: { mark: 0x10, mask: 0xff },
      action: "lookup",
      table: 200,
    });
    expect(byPriority(v4, 101)).toMatchObject({ oif: "eth0", action: "blackhole", table: 0 });
    expect(byPriority(v4, 102)).toMatchObject({
      fwmark: { mark: 7, mask: 0xffffffff },
      action: "unreachable",
    });
    expect(byPriority(v4, 32765)).toEqual({
      family: 4,
      priority: 32765,
      not: false,
      src: "10.248.246.146/32",
      action: "lookup",
      table: 100,
    });
    expect(byPriority(v6, 104)).toMatchObject({ family: 6, src: "2001:db8::/32", table: 300 });
    expect([...v4, ...v6]).toEqual(
      expect.arrayContaining(DEFAULT_RULES.map((d) => expect.objectContaining(d))),
    );
  });

  it("reads every other selector and action as canonical attributes (numbers, not names)", () => {
    const attrs = (r: Rule | undefined) => [r?.attrs, r?.other, r?.table];
    expect(attrs(byPriority(v4, 105))).toEqual([[["suppress_prefixlength", "0"]], undefined, 254]);
    expect(attrs(byPriority(v4, 110))).toEqual([
      [
        ["dport", "80"],
        ["ipproto", "6"],
        ["sport", "1000-2000"],
      ],
      undefined,
      100,
    ]);
    expect(attrs(byPriority(v4, 111))).toEqual([
      [
        ["tos", "0x10"],
        ["uidrange", "1000-2000"],
      ],
      undefined,
      100,
    ]);
    // goto, nop and l3mdev are the action: no table.
    expect(attrs(byPriority(v4, 112))).toEqual([[["goto", "120"]], undefined, 0]);
    expect(attrs(byPriority(v4, 113))).toEqual([[["nop", "on"]], undefined, 0]);
    expect(attrs(byPriority(v4, 114))).toEqual([[["suppress_ifgroup", "5"]], undefined, 254]);
    expect(attrs(byPriority(v4, 115))).toEqual([[["l3mdev", "on"]], undefined, 0]);
    expect(attrs(byPriority(v4, 116))).toEqual([[["realms", "3/4"]], undefined, 100]);
    // A device that is not there: the rule is the same rule, detached.
    expect(byPriority(v4, 117)).toMatchObject({ iif: "tun9", attrs: [["protocol", "static"]] });
    expect(byPriority(v4, 117)?.other).toBeUndefined();
    expect(byPriority(v6, 118)).toMatchObject({ oif: "tun9", attrs: [["ipproto", "58"]] });
  });

  it("keeps what it cannot carry as `other`: an unknown key, a name it cannot turn into a number", () => {
    const [r] = parseRules(
      [{ priority: 7, src: "all", ipproto: "foo-proto", flow_to: "cosmos", table: "100", x: 1 }],
      4,
    );
    expect(r?.other).toEqual(["x=1", 'ipproto="foo-proto"', 'flow_to="cosmos"']);
    expect(r?.attrs).toBeUndefined();
  });

  it("skips entries without a priority, and non-arrays", () => {
    expect(parseRules([{ src: "all" }, null, 3], 4)).toEqual([]);
    expect(parseRules({}, 4)).toEqual([]);
  });
});

describe("renderRule", () => {
  it("renders every selector; every IPv6 rule is marked for ip -6", () => {
    const [r] = parseRules([V4[1]], 4);
    expect(renderRule("add", r as Rule)).toBe(
      "rule add priority 100 not from 10.1.0.0/16 to 10.2.0.0/24 iif eth0 fwmark 0x10/0xff lookup 200",
    );
    expect(renderRule("del", DEFAULT_RULES[4] as Rule)).toBe(
      "-6 rule del priority 32766 protocol 2 lookup main",
    );
    const line = (p: number) => renderRule("add", byPriority(parseRules(V4, 4), p) as Rule);
    expect(line(110)).toBe(
      "rule add priority 110 from 10.0.0.0/8 dport 80 ipproto 6 sport 1000-2000 lookup 100",
    );
    expect(line(111)).toBe("rule add priority 111 tos 0x10 uidrange 1000-2000 lookup 100");
    expect(line(112)).toBe("rule add priority 112 goto 120");
    expect(line(113)).toBe("rule add priority 113 nop");
    expect(line(115)).toBe("rule add priority 115 l3mdev");
    expect(line(116)).toBe("rule add priority 116 realms 3/4 lookup 100");
    expect(line(117)).toBe("rule add priority 117 iif tun9 protocol 4 lookup 100");
    // iproute2 sends a rule without -6 as IPv4, whatever its prefix.
    const [v6] = parseRules(
      [{ priority: 9613, src: "fd90:6b33:220a:4300::", srclen: 56, action: "blackhole" }],
      6,
    );
    expect(renderRule("add", v6 as Rule)).toBe(
      "-6 rule add priority 9613 from fd90:6b33:220a:4300::/56 blackhole",
    );
  });

  it("refuses a value that would be more than one token", () => {
    const bad: Rule = {
      family: 4,
      priority: 5,
      not: false,
      iif: "eth0 lookup 1\nrule flush",
      action: "lookup",
      table: 100,
    };
    expect(() => renderRule("add", bad)).toThrow(/refusing/);
  });
});
