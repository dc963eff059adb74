/**
 * parseLinks on a fresh `ip -d -j addr show` recording (iproute2 6.1,
 * Linux 6.18, a throwaway netns: test/fixtures/ip/addr-attrs.json) of a
 * veth with txqueuelen 0, promisc, allmulticast, group 5 and an alias, and
 * addresses with broadcast, label, metric, noprefixroute, a peer of each
 * family, scope host, home, mngtmpaddr, a deprecated finite one and an
 * optimistic one (not carried: listed in `other`). The wire list
 * (addressAttrList) and the `ip` words (addressWords) of each.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { addressAttrList, addressWords } from "../../src/net/model/address-attrs";
import { parseLinks } from "../../src/net/parse/parse-ip-json";

const doc = JSON.parse(
  readFileSync(new URL("../fixtures/ip/addr-attrs.json", import.meta.url), "utf8"),
) as unknown;

describe("parseLinks: attributes", () => {
  const [v0] = parseLinks(doc);

  it("reads the link's attributes, every row", () => {
    expect(v0?.attrs).toEqual([
      ["alias", "pod uplink"],
      ["allmulticast", "on"],
      ["dynamic", "off"],
      ["group", "5"],
      ["multicast", "on"],
      ["promisc", "on"],
      ["trailers", "on"],
      ["txqueuelen", "0"],
    ]);
  });

  it("reads each address in the kernel's order, typed fields and the rest", () => {
    const list = (v0?.addresses ?? []).map((a) => [a.address, addressAttrList(a), a.other]);
    expect(list).toEqual([
      ["10.3.0.1", [["scope", "host"]], undefined],
      [
        "10.1.0.2",
        [
          ["broadcast", "10.1.0.255"],
          ["label", "v0:x"],
          ["metric", "7"],
          ["noprefixroute", "on"],
        ],
        undefined,
      ],
      ["10.2.0.1", [["peer", "10.2.0.9"]], undefined],
      ["fd00:7::2", [], ["optimistic=true"]],
      ["fd00:5::2", [["peer", "fd00:5::1"]], undefined],
      [
        "fd00::2",
        [
          ["home", "on"],
          ["mngtmpaddr", "on"],
        ],
        undefined,
      ],
      [
        "fd00::1",
        [
          ["preferred_lft", "0"],
          ["valid_lft", "1000"],
        ],
        undefined,
      ],
      ["fe80::4ce3:f3ff:fee3:2b7f", [], undefined],
    ]);
  });

  it("writes each back as ip words (a scope by number: ip misreads a name after a number)", () => {
    expect((v0?.addresses ?? []).map((a) => addressWords(a).join(" "))).toEqual([
      "10.3.0.1/24 scope 254",
      "10.1.0.2/24 broadcast 10.1.0.255 label v0:x metric 7 noprefixroute",
      "10.2.0.1 peer 10.2.0.9/32",
      "fd00:7::2/64",
      "fd00:5::2 peer fd00:5::1/128",
      "fd00::2/64 home mngtmpaddr",
      "fd00::1/64 preferred_lft 0 valid_lft 1000",
      "fe80::4ce3:f3ff:fee3:2b7f/64",
    ]);
  });
});

describe("parseLinks: nodad", () => {
  const entry = (flags: string[]) => [
    {
      ifindex: 2,
      ifname: "eth0",
      flags,
      addr_info: [
        { family: "inet6", local: "fd00::2", prefixlen: 64, scope: "global", nodad: true },
        { family: "inet6", local: "fd00::3", prefixlen: 64, scope: "global", tentative: true },
      ],
    },
  ];
  const attrsOf = (flags: string[]) =>
    (parseLinks(entry(flags))[0]?.addresses ?? []).map((a) => [a.address, a.attrs]);

  it("is carried on a link that is down (it decides tentative or usable there), not on one that is up", () => {
    expect(attrsOf(["BROADCAST", "MULTICAST"])).toEqual([
      ["fd00::2", [["nodad", "on"]]],
      ["fd00::3", undefined],
    ]);
    expect(attrsOf(["BROADCAST", "MULTICAST", "UP", "LOWER_UP"])).toEqual([
      ["fd00::2", undefined],
      ["fd00::3", undefined],
    ]);
  });
});
