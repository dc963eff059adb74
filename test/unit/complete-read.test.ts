/**
 * The guest's answers are untrusted input: src/host/compare/complete-read.ts
 * parses each listing with bounds and refuses anything malformed with an
 * error naming the side and the listing, never a crash; the text listing's
 * locks are matched to the JSON routes by position, and a disagreement
 * (routes that moved between the two) is its own error, to read again.
 */
import { describe, expect, it } from "vitest";
import {
  lockedMetrics,
  parseListing,
  parseObject,
  READ_BOUNDS,
  ReadError,
  RoutesMovedError,
  toCompleteRead,
} from "../../src/host/compare/complete-read";
import { LISTING_NAMES } from "../../src/net/iproute/complete-listings";

const listings = (over: Record<string, string> = {}) =>
  LISTING_NAMES.map((name) => ({
    name,
    output: over[name] ?? (name.startsWith("route-text") ? "" : "[]"),
  }));

describe("parseListing", () => {
  const cases: [string, string, RegExp][] = [
    ["not JSON", "[{", /the guest's route4 listing is not JSON/],
    ["an object, not an array", "{}", /is not a JSON array/],
    ["an entry that is no object", "[1]", /holds an entry that is not an object/],
    ["an entry that is an array", "[[]]", /holds an entry that is not an object/],
    ["null", "null", /is not a JSON array/],
    [
      "too deep",
      `${"[".repeat(READ_BOUNDS.depth + 1)}${"]".repeat(READ_BOUNDS.depth + 1)}`,
      /nests deeper than 16 levels/,
    ],
    ["a million levels", `${"[".repeat(1_000_000)}`, /nests deeper than 16 levels/],
  ];
  for (const [what, text, error] of cases) {
    it(`refuses ${what}`, () => {
      expect(() => parseListing("the guest", "route4", text)).toThrow(error);
      expect(() => parseListing("the guest", "route4", text)).toThrow(ReadError);
    });
  }

  it("takes brackets inside strings as text", () => {
    const deep = `[{"ifname":"${"[".repeat(100)}"}]`;
    expect(parseListing("the guest", "link", deep)).toEqual([{ ifname: "[".repeat(100) }]);
  });

  it("refuses more entries than the bound", () => {
    const text = `[${Array(READ_BOUNDS.entries + 1)
      .fill("{}")
      .join(",")}]`;
    expect(() => parseListing("the guest", "route4", text)).toThrow(/more than 200000 entries/);
  });

  it("parseObject takes one object only", () => {
    expect(parseObject("answer", '{"dev":"eth0"}')).toEqual({ dev: "eth0" });
    expect(() => parseObject("answer", "[]")).toThrow(/answer is not a JSON object/);
    expect(() => parseObject("answer", "x")).toThrow(/answer is not JSON/);
  });
});

describe("toCompleteRead", () => {
  it("matches each route's locks from the text listing by position", () => {
    const r = toCompleteRead(
      "the pod",
      listings({
        route4: '[{"dst":"10.8.0.0/16","metrics":[{"mtu":1400}]},{"dst":"default","nexthops":[]}]',
        "route-text4":
          "unicast 10.8.0.0/16 via 10.9.0.2 dev eth0 mtu lock 1400 advmss 1300\nunicast default table main\n\tnexthop via 10.9.0.2 dev eth0 weight 1\n",
      }),
      [],
      [],
    );
    expect(r.routes).toEqual([
      { family: "inet", dst: "10.8.0.0/16", metrics: [{ mtu: 1400 }], locks: ["mtu"] },
      { family: "inet", dst: "default", nexthops: [] },
    ]);
    expect(lockedMetrics("x mtu lock 1400 window lock 9 rtt 3")).toEqual(["mtu", "window"]);
  });

  it("says routes that moved between the two listings", () => {
    const moved = listings({ route4: '[{"dst":"10.8.0.0/16"}]', "route-text4": "" });
    expect(() => toCompleteRead("the guest", moved, [], [])).toThrow(RoutesMovedError);
    const locked = listings({
      route4: '[{"dst":"10.8.0.0/16","metrics":[{"mtu":1400}]}]',
      "route-text4": "",
    });
    expect(() => toCompleteRead("the guest", locked, [], [])).toThrow(RoutesMovedError);
  });

  it("needs no text listing for a family whose routes have no metrics (a lock is a metric's)", () => {
    const l = listings({ route4: '[{"dst":"10.8.0.0/16"}]' }).filter(
      (x) => x.name !== "route-text4",
    );
    expect(toCompleteRead("the pod", l, [], []).routes).toEqual([
      { family: "inet", dst: "10.8.0.0/16" },
    ]);
    const locked = listings({ route4: '[{"dst":"10.8.0.0/16","metrics":[{"mtu":1400}]}]' });
    expect(() =>
      toCompleteRead(
        "the pod",
        locked.filter((x) => x.name !== "route-text4"),
        [],
        [],
      ),
    ).toThrow(RoutesMovedError);
  });

  it("refuses unknown, repeated and missing listings", () => {
    expect(() =>
      toCompleteRead("the guest", [...listings(), { name: "x\u001b[2J", output: "[]" }], [], []),
    ).toThrow(/a listing this netagentctl does not know/);
    expect(() =>
      toCompleteRead("the guest", [...listings(), { name: "link", output: "[]" }], [], []),
    ).toThrow(/lists link twice/);
    expect(() => toCompleteRead("the guest", listings().slice(1), [], [])).toThrow(
      /has no link listing/,
    );
  });

  it("takes a listing the kernel cannot give (an error) as absent", () => {
    const l = listings().map((x) =>
      x.name === "nexthop" ? { ...x, output: "", error: "Unknown command" } : x,
    );
    expect(toCompleteRead("the guest", l, [], []).nexthops).toBeNull();
  });

  it("refuses sysctl paths that are no path below /proc/sys/net, and values past the bound", () => {
    for (const path of [
      "../etc/shadow",
      "ipv4//x",
      "/ipv4/x",
      "ipv4/x\n",
      "ipv4/./x",
      "a".repeat(300),
    ]) {
      expect(() => toCompleteRead("the guest", listings(), [[path, "1"]], [])).toThrow(
        /no sysctl path/,
      );
    }
    expect(() =>
      toCompleteRead("the guest", listings(), [["ipv4/x", "y".repeat(5000)]], []),
    ).toThrow(/longer than 4096/);
    expect(() =>
      toCompleteRead(
        "the guest",
        listings(),
        [],
        [
          ["a/b", "1"],
          ["a/b", "2"],
        ],
      ),
    ).toThrow(/twice/);
    expect(
      toCompleteRead("the guest", listings(), [["ipv4/conf/vnic.a-b_c/rp_filter", "2"]], []).sysctls
        .size,
    ).toBe(1);
  });
});
