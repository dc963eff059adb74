/**
 * The `ip -json` parsers against output recorded from iproute2 6.1 in a
 * throwaway netns (test/fixtures/ip/*.out; see the commit that added them):
 * veth links, v4/v6 addresses (secondary, /32, noprefixroute), routes with
 * onlink, mtu, scope link, src, proto static + metric, unreachable,
 * blackhole, IPv6 default, and neighbours permanent/reachable/failed/router.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type Route, routeIdentity } from "../../src/net/model/model";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";
import { parseLinks, parseNeighbors, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/ip/${name}`, import.meta.url), "utf8");
const one = (name: string) => {
  const docs = splitJsonDocuments(fixture(name));
  expect(docs).toHaveLength(1);
  return docs[0];
};

const base = { scope: 0, metric: 0, onlink: false, mtu: 0, protocol: "boot", type: "unicast" };

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

describe("parseRoutes (route-show-main.out, route6-show-main.out)", () => {
  const v4 = parseRoutes(one("route-show-main.out"), 4);
  const v6 = parseRoutes(one("route6-show-main.out"), 6);

  it("reads the IPv4 main table (default, onlink, mtu, static metric, PTP, /32 scope link, kernel, blackhole, unreachable)", () => {
    expect(v4).toEqual([
      { ...base, family: 4, dst: "0.0.0.0/0", gateway: "10.248.246.145", dev: "eth0" },
      { ...base, family: 4, dst: "10.9.0.0/16", gateway: "169.254.1.1", dev: "eth1", onlink: true },
      { ...base, family: 4, dst: "10.10.0.0/16", gateway: "192.168.1.1", dev: "eth1", mtu: 1400 },
      {
        ...base,
        family: 4,
        dst: "10.11.0.0/16",
        dev: "eth1",
        scope: 253,
        metric: 100,
        protocol: "static",
      },
      // The PTP route: `replace` overwrote the kernel's subnet route (same key).
      {
        ...base,
        family: 4,
        dst: "10.248.246.144/28",
        gateway: "10.248.246.145",
        dev: "eth0",
        prefsrc: "10.248.246.146",
      },
      // ip prints a host route without "/32".
      {
        ...base,
        family: 4,
        dst: "10.248.246.145/32",
        dev: "eth0",
        prefsrc: "10.248.246.146",
        scope: 253,
      },
      {
        ...base,
        family: 4,
        dst: "192.168.1.0/24",
        dev: "eth1",
        prefsrc: "192.168.1.5",
        scope: 253,
        protocol: "kernel",
      },
      { ...base, family: 4, dst: "198.51.100.0/24", dev: "", type: "blackhole" },
      { ...base, family: 4, dst: "203.0.113.0/24", dev: "", type: "unreachable" },
    ]);
  });

  it("reads the IPv6 main table (kernel metric 256, link-local per link, mtu, unreachable on lo, default)", () => {
    const k = { ...base, family: 6, metric: 256, protocol: "kernel" };
    expect(v6).toEqual([
      { ...k, dst: "2001:db8::/64", dev: "eth0" },
      {
        ...base,
        family: 6,
        dst: "2001:db8:5::/48",
        gateway: "fe80::1",
        dev: "eth1",
        metric: 1024,
        mtu: 1300,
      },
      // The kernel puts IPv6 unreachable routes on lo.
      {
        ...base,
        family: 6,
        dst: "2001:db8:dead::/48",
        dev: "lo",
        metric: 1024,
        type: "unreachable",
      },
      { ...k, dst: "fd00:1::/64", dev: "eth1" },
      { ...k, dst: "fe80::/64", dev: "eth0" },
      { ...k, dst: "fe80::/64", dev: "peer0" },
      { ...k, dst: "fe80::/64", dev: "eth1" },
      { ...k, dst: "fe80::/64", dev: "peer1" },
      { ...base, family: 6, dst: "::/0", gateway: "2001:db8::1", dev: "eth0", metric: 1024 },
    ]);
  });

  it("agrees with impliedKernelRoutes: every recorded kernel route is implied, and vice versa but the one PTP replaced", () => {
    const implied = impliedKernelRoutes(parseLinks(one("addr-show.out")));
    const id = (r: Route) => routeIdentity(r, true);
    const recorded = [...v4, ...v6].filter((r) => r.protocol === "kernel").map(id);
    expect(implied.map(id).sort()).toEqual(
      [
        ...recorded,
        id({
          ...base,
          family: 4,
          dst: "10.248.246.144/28",
          dev: "eth0",
          prefsrc: "10.248.246.146",
          scope: 253,
          protocol: "kernel",
        }),
      ].sort(),
    );
  });

  it("masks host bits, maps scope names and numbers, keeps unknown protocols as text", () => {
    const routes = parseRoutes(
      [
        { dst: "10.1.2.3/8", dev: "a", scope: "host", protocol: 42 },
        { dst: "2001:db8::1/32", dev: "a", scope: "253", metric: 5 },
        { dst: "10.0.0.0/8", dev: "a", scope: "site" },
        { dst: "10.0.0.0/8", dev: "a", scope: "weird" },
      ],
      4,
    );
    expect(routes.map((r) => [r.dst, r.scope, r.protocol, r.metric])).toEqual([
      ["10.0.0.0/8", 254, "42", 0],
      ["2001:db8::/32", 253, "boot", 5],
      ["10.0.0.0/8", 200, "boot", 0],
      ["10.0.0.0/8", 0, "boot", 0],
    ]);
  });

  it("skips other tables, unparseable destinations and entries without dst", () => {
    expect(
      parseRoutes(
        [
          { dst: "10.0.0.0/8", dev: "a", table: "local" },
          { dst: "10.0.0.0/8", dev: "a", table: "main" },
          { dst: "nonsense", dev: "a" },
          { dev: "a" },
          "junk",
        ],
        4,
      ).map((r) => r.dst),
    ).toEqual(["10.0.0.0/8"]);
  });

  it("takes a multipath route's device from its first hop and drops a gateway of the other family", () => {
    const [mp, v4via6] = parseRoutes(
      [
        {
          dst: "10.0.0.0/8",
          nexthops: [
            { gateway: "192.0.2.1", dev: "eth3" },
            { gateway: "192.0.2.2", dev: "eth4" },
          ],
        },
        { dst: "10.1.0.0/16", gateway: "fe80::1", dev: "eth0" },
      ],
      4,
    );
    expect(mp?.dev).toBe("eth3");
    expect(v4via6?.gateway).toBeUndefined();
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

describe("splitJsonDocuments", () => {
  it("splits the -batch state read into addr, route and neigh documents equal to the single reads", () => {
    const docs = splitJsonDocuments(fixture("batch-state.out"));
    expect(docs).toHaveLength(3);
    expect(parseLinks(docs[0])).toEqual(parseLinks(one("addr-show.out")));
    expect(parseRoutes(docs[1], 4)).toEqual(parseRoutes(one("route-show-main.out"), 4));
    expect(parseNeighbors(docs[2])).toEqual(parseNeighbors(one("neigh-show.out")));
  });

  it.each([
    ["empty input", "", []],
    ["whitespace only", " \n\t", []],
    ["back to back", '[1][{"a":2}]{}', [[1], [{ a: 2 }], {}]],
    ["newline separated", "[]\n[]\n", [[], []]],
    [
      "brackets inside strings",
      '[{"s":"]["},{"t":"{{"}]\n["}"]',
      [[{ s: "][" }, { t: "{{" }], ["}"]],
    ],
    ["escaped quotes", '[{"s":"a\\"]b"}]["\\\\"]', [[{ s: 'a"]b' }], ["\\"]]],
    ["escaped backslash before a quote", '["x\\\\"]["]"]', [["x\\"], ["]"]]],
    ["unicode escapes", '["\\u005d"]', [["]"]]],
  ])("%s", (_name, text, expected) => {
    expect(splitJsonDocuments(text)).toEqual(expected);
  });

  it.each([
    ["truncated array", '[{"a":1}'],
    ["truncated inside a string", '[{"a":"]'],
    ["truncated after a whole document", '[][{"a":[1,2]'],
    ["cut in the recorded batch output", fixture("batch-state.out").slice(0, 3000)],
  ])("throws SyntaxError on %s", (_name, text) => {
    expect(() => splitJsonDocuments(text)).toThrow(SyntaxError);
  });

  it("throws SyntaxError when a balanced slice is not JSON", () => {
    expect(() => splitJsonDocuments("[1,,2]")).toThrow(SyntaxError);
  });
});

describe("parseRoutes without a family (route show table all)", () => {
  it("infers each route's family and keeps only the main table", () => {
    const doc = [
      {
        type: "unicast",
        dst: "default",
        dev: "a0",
        table: "main",
        protocol: "boot",
        scope: "link",
        flags: [],
      },
      {
        type: "local",
        dst: "10.0.0.2",
        dev: "a0",
        table: "local",
        protocol: "kernel",
        scope: "host",
        prefsrc: "10.0.0.2",
        flags: [],
      },
      {
        type: "unicast",
        dst: "default",
        dev: "a0",
        table: "main",
        protocol: "boot",
        scope: "global",
        metric: 1024,
        flags: [],
        pref: "medium",
      },
      {
        type: "unicast",
        dst: "default",
        gateway: "fe80::1",
        dev: "a0",
        table: "main",
        metric: 1024,
        flags: [],
      },
      {
        type: "unicast",
        dst: "10.0.0.0/24",
        dev: "a0",
        table: "main",
        prefsrc: "10.0.0.2",
        protocol: "kernel",
        scope: "link",
        flags: [],
      },
      {
        type: "unreachable",
        dst: "2001:db8::/32",
        dev: "lo",
        table: "main",
        metric: 1024,
        flags: [],
        pref: "medium",
      },
    ];
    expect(parseRoutes(doc).map((r) => `${r.family} ${r.dst} ${r.dev}`)).toEqual([
      "4 0.0.0.0/0 a0",
      "6 ::/0 a0",
      "6 ::/0 a0",
      "4 10.0.0.0/24 a0",
      "6 2001:db8::/32 lo",
    ]);
  });

  it("reads the recorded listing like the two per-family ones", () => {
    expect(parseRoutes(one("route-show-all.out"))).toEqual([
      ...parseRoutes(one("route-show-main.out"), 4),
      ...parseRoutes(one("route6-show-main.out"), 6),
    ]);
  });
});
