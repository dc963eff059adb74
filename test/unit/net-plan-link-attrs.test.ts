/**
 * planLink with attributes (exact plans, netagent.v1): link attributes set
 * where they differ and kept where not listed; an address's attributes
 * replaced in place where `addr replace` changes them, the address made
 * again where it cannot; IPv6 addresses added last first and after the up.
 * A property: a link planned against itself (every attribute drawn at
 * random) gives no line, and one attribute changed gives lines naming it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Address, Link } from "../../src/net/model/model";
import { type LinkTarget, planLink } from "../../src/net/plan/plan-link";
import type { Attr } from "../../src/net/vocabulary/attrs";

const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];

function link(over: Partial<Link> = {}): Link {
  return {
    index: 2,
    name: "eth0",
    mac: "02:00:00:00:00:02",
    mtu: 1500,
    flags: UP,
    kind: "veth",
    addresses: [],
    ...over,
  };
}

function target(l: Link, over: Partial<LinkTarget> = {}): LinkTarget {
  return {
    name: l.name,
    mtu: l.mtu,
    noarp: false,
    addresses: l.addresses,
    up: true,
    exactAddresses: false,
    exactAttrs: true,
    ...(l.attrs ? { attrs: l.attrs } : {}),
    ...over,
  };
}

const v4 = (address: string, over: Partial<Address> = {}): Address => ({
  family: 4,
  address,
  prefix: 24,
  scope: "global",
  ...over,
});
const v6 = (address: string, over: Partial<Address> = {}): Address => ({
  family: 6,
  address,
  prefix: 64,
  scope: "global",
  ...over,
});

describe("planLink: link attributes", () => {
  it("sets those that differ in one line, keeps those not listed", () => {
    const l = link({
      attrs: [
        ["alias", ""],
        ["promisc", "off"],
        ["txqueuelen", "1000"],
      ],
    });
    const want: Attr[] = [
      ["alias", "pod uplink"],
      ["txqueuelen", "0"],
    ];
    expect(planLink([l], l, target(l, { attrs: want }))).toEqual([
      'link set dev eth0 alias "pod uplink" txqueuelen 0',
    ]);
    expect(planLink([l], l, target(l, { attrs: [["promisc", "off"]] }))).toEqual([]);
  });
});

describe("planLink: address attributes", () => {
  it("adds an address with every attribute, a peer's prefix on the peer", () => {
    const l = link();
    const want = [
      v4("10.0.0.2", {
        attrs: [
          ["broadcast", "10.0.0.255"],
          ["label", "eth0:3"],
        ],
        metric: 5,
      }),
      v4("10.1.0.1", { prefix: 32, peer: "10.1.0.9" }),
    ];
    expect(planLink([l], l, target(l, { addresses: want }))).toEqual([
      "addr add 10.0.0.2/24 broadcast 10.0.0.255 label eth0:3 metric 5 dev eth0",
      "addr add 10.1.0.1 peer 10.1.0.9/32 dev eth0",
    ]);
  });

  it("replaces a metric or lifetime in place; makes an IPv4 address again for a new broadcast", () => {
    const l = link({
      addresses: [
        v4("10.0.0.2", { attrs: [["broadcast", "10.0.0.255"]] }),
        v6("fd00::2", { metric: 10, attrs: [["valid_lft", "500"]] }),
      ],
    });
    const want = [
      v4("10.0.0.2", { attrs: [["broadcast", "10.0.0.254"]] }),
      v6("fd00::2", {
        metric: 20,
        attrs: [
          ["preferred_lft", "0"],
          ["valid_lft", "400"],
        ],
      }),
    ];
    expect(planLink([l], l, target(l, { addresses: want }))).toEqual([
      "addr del 10.0.0.2/24 dev eth0",
      "addr add 10.0.0.2/24 broadcast 10.0.0.254 dev eth0",
      "addr replace fd00::2/64 metric 20 preferred_lft 0 valid_lft 400 dev eth0 nodad",
    ]);
    // a lifetime that only counted down is the same
    const same = [
      v4("10.0.0.2", { attrs: [["broadcast", "10.0.0.255"]] }),
      v6("fd00::2", { metric: 10, attrs: [["valid_lft", "499"]] }),
    ];
    expect(planLink([l], l, target(l, { addresses: same }))).toEqual([]);
  });

  it("deletes a peer address naming its peer", () => {
    const l = link({ addresses: [v4("10.1.0.1", { prefix: 32, peer: "10.1.0.9" })] });
    expect(planLink([l], l, target(l, { addresses: [] }))).toEqual([
      "addr del 10.1.0.1 peer 10.1.0.9/32 dev eth0",
    ]);
  });

  it("adds IPv6 addresses last first, after the link comes up", () => {
    const l = link({ flags: ["BROADCAST", "MULTICAST"] });
    const want = [v4("10.0.0.2"), v6("fd00::1"), v6("fd00::2"), v6("fd00::3")];
    expect(planLink([l], l, target(l, { addresses: want }))).toEqual([
      "addr add 10.0.0.2/24 dev eth0",
      "link set dev eth0 up",
      "addr add fd00::3/64 dev eth0 nodad",
      "addr add fd00::2/64 dev eth0 nodad",
      "addr add fd00::1/64 dev eth0 nodad",
    ]);
  });
});

const ATTR = fc.record({
  broadcast: fc.option(fc.constantFrom("10.0.0.255", "10.0.0.254"), { nil: undefined }),
  label: fc.option(fc.constantFrom("eth0:1", "eth0:2"), { nil: undefined }),
  metric: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
  noprefixroute: fc.boolean(),
  valid: fc.option(fc.constantFrom("0", "600"), { nil: undefined }),
  home: fc.boolean(),
});

type Drawn = typeof ATTR extends fc.Arbitrary<infer T> ? T : never;

function address(family: 4 | 6, k: number, r: Drawn): Address {
  const attrs: Attr[] = [];
  if (family === 4 && r.broadcast) attrs.push(["broadcast", r.broadcast]);
  if (family === 6 && r.home) attrs.push(["home", "on"]);
  if (family === 4 && r.label) attrs.push(["label", r.label]);
  if (r.valid !== undefined) attrs.push(["preferred_lft", r.valid], ["valid_lft", "900"]);
  const base = family === 4 ? v4(`10.0.${k}.2`) : v6(`fd00:${k}::2`);
  return {
    ...base,
    ...(r.metric ? { metric: r.metric } : {}),
    ...(r.noprefixroute ? { noprefixroute: true } : {}),
    ...(attrs.length ? { attrs: attrs.sort(([a], [b]) => (a < b ? -1 : 1)) } : {}),
  };
}

describe("planLink: property", () => {
  it("a link against itself plans nothing; one attribute changed plans a line naming the address", () => {
    const addrs = fc.array(fc.tuple(fc.constantFrom(4 as const, 6 as const), ATTR), {
      minLength: 1,
      maxLength: 5,
    });
    fc.assert(
      fc.property(addrs, ATTR, fc.nat(), (list, other, pick) => {
        const have = list.map(([f, r], k) => address(f, k, r));
        const l = link({ addresses: have });
        expect(planLink([l], l, target(l))).toEqual([]);
        const k = pick % have.length;
        const [f] = list[k] as [4 | 6, unknown];
        const changed = address(f, k, other);
        const same = JSON.stringify(changed) === JSON.stringify(have[k]);
        const want = have.map((a, i) => (i === k ? changed : a));
        const lines = planLink([l], l, target(l, { addresses: want }));
        if (same) expect(lines).toEqual([]);
        else expect(lines.some((x) => x.includes(` ${changed.address}/`))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
