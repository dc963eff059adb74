/**
 * The `ip -json` parsers of links, addresses and neighbours against output
 * recorded from iproute2 6.1 in a throwaway netns (test/fixtures/ip/*.out;
 * see the commit that added them): veth links, v4/v6 addresses
 * (secondary, /32, noprefixroute), and neighbours
 * permanent/reachable/failed/router. Routes: net-parse-main-routes.test.ts;
 * the split of a -batch read: net-parse-documents.test.ts.
 */

import { describe, expect, it } from "vitest";
import { parseLinks, parseNeighbors } from "../../src/net/parse/parse-ip-json";
import { one } from "../helpers/ip-fixtures";

describe("parseLinks (addr-show.out)", () => {
  const links = parseLinks(one("addr-show.out"));

  it("reads every link with index, name, lower-case MAC, MTU, flags and kind", () => {
    expect(links.map((l) => [l.index, l.name, l.mac, l.mtu, l.kind])).toEqual([
      [1, "lo", "00:00:00:00:00:00", 65536, ""],
      [2, "peer0", "02:aa:bb:cc:dd:02", 1500, "veth"],
      // Created as 02:AA:bb:...: the kernel and the parser give lower case.
      [3, "eth0", "02:aa:bb:cc:dd:01", 1500, "veth"],
      [4, "peer1", links[3]?.mac, 1500, "veth"],
      [5, "eth1", "02:aa:bb:cc:dd:11", 9000, "veth"],
    ]);
    expect(links[3]?.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    expect(links[0]?.flags).toEqual(["LOOPBACK", "UP", "LOWER_UP"]);
    expect(links[4]?.flags).toEqual(["BROADCAST", "MULTICAST", "NOARP", "UP", "LOWER_UP"]);
  });

  it("gives every address its family, prefix, scope, noprefixroute and secondary flag", () => {
    expect(links.find((l) => l.name === "eth0")?.addresses).toEqual([
      { family: 4, address: "10.248.246.146", prefix: 28, scope: "global" },
      { family: 4, address: "10.248.246.150", prefix: 28, scope: "global", secondary: true },
      { family: 6, address: "2001:db8::146", prefix: 64, scope: "global" },
      { family: 6, address: "fe80::aa:bbff:fecc:dd01", prefix: 64, scope: "link" },
    ]);
    expect(links.find((l) => l.name === "eth1")?.addresses).toEqual([
      { family: 4, address: "192.168.1.5", prefix: 24, scope: "global" },
      { family: 4, address: "172.16.0.1", prefix: 32, scope: "global" },
      { family: 4, address: "192.168.9.9", prefix: 24, scope: "global", noprefixroute: true },
      { family: 6, address: "fd00:1::2", prefix: 64, scope: "global" },
      { family: 6, address: "fe80::aa:bbff:fecc:dd11", prefix: 64, scope: "link" },
    ]);
    expect(links[0]?.addresses).toEqual([
      { family: 4, address: "127.0.0.1", prefix: 8, scope: "host" },
      { family: 6, address: "::1", prefix: 128, scope: "host" },
    ]);
  });

  it("skips entries without a name or index and addresses without local/prefixlen", () => {
    expect(
      parseLinks([
        { ifname: "x" },
        { ifindex: 2 },
        null,
        7,
        {
          ifindex: 9,
          ifname: "e",
          addr_info: [{ family: "inet" }, { local: "10.0.0.1" }, "junk"],
        },
      ]),
    ).toEqual([
      {
        index: 9,
        name: "e",
        mac: "",
        mtu: 0,
        flags: [],
        kind: "",
        addresses: [],
        // no flags list: promisc and allmulticast unknown; no ifalias or txqlen: none, 0
        attrs: [
          ["alias", ""],
          ["txqueuelen", "0"],
        ],
      },
    ]);
    expect(parseLinks({ not: "an array" })).toEqual([]);
    expect(parseLinks(undefined)).toEqual([]);
  });
});

describe("parseNeighbors (neigh-show.out)", () => {
  it("reads permanent, reachable, failed (no lladdr) and router entries", () => {
    expect(parseNeighbors(one("neigh-show.out"))).toEqual([
      {
        family: 4,
        ip: "192.168.1.1",
        dev: "eth1",
        lladdr: "02:aa:bb:cc:dd:99",
        state: ["REACHABLE"],
        router: false,
      },
      {
        family: 4,
        ip: "10.248.246.145",
        dev: "eth0",
        lladdr: "02:aa:bb:cc:dd:02",
        state: ["PERMANENT"],
        router: false,
      },
      { family: 4, ip: "192.168.1.7", dev: "eth1", lladdr: "", state: ["FAILED"], router: false },
      // iproute2 prints `"router": null`: the key's presence is the flag.
      {
        family: 6,
        ip: "2001:db8::1",
        dev: "eth0",
        lladdr: "02:aa:bb:cc:dd:02",
        state: ["REACHABLE"],
        router: true,
      },
    ]);
  });

  it("lower-cases lladdr and skips entries without dst or dev", () => {
    expect(
      parseNeighbors([
        { dst: "10.0.0.1", dev: "e", lladdr: "AA:BB:CC:DD:EE:FF", state: ["STALE", 3] },
        { dst: "10.0.0.2" },
        { dev: "e" },
      ]),
    ).toEqual([
      {
        family: 4,
        ip: "10.0.0.1",
        dev: "e",
        lladdr: "aa:bb:cc:dd:ee:ff",
        state: ["STALE"],
        router: false,
      },
    ]);
  });
});
