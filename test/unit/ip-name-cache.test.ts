import { describe, expect, it } from "vitest";
import { NameCacheWatch, parseListing } from "../../src/net/iproute/ip-name-cache";

/** A `-json link show` document of `links` (index, name). */
const listing = (...links: [number, string][]) =>
  JSON.stringify(links.map(([ifindex, ifname]) => ({ ifindex, ifname, flags: ["UP"] })));

describe("NameCacheWatch", () => {
  const start = () => {
    const w = new NameCacheWatch();
    expect(w.observe(listing([1, "lo"], [2, "eth0"], [3, "eth1"]))).toBe(true);
    return w;
  };

  it("trusts a cache when links were only added", () => {
    expect(start().observe(listing([1, "lo"], [2, "eth0"], [3, "eth1"], [9, "eth2"]))).toBe(true);
  });

  it("does not trust it once someone else renamed a link", () => {
    expect(start().observe(listing([1, "lo"], [2, "eth1"], [3, "eth0"]))).toBe(false);
    expect(start().observe(listing([1, "lo"], [2, "ethX"], [3, "eth1"]))).toBe(false);
  });

  it("accepts the process's own renames", () => {
    expect(start().observe(listing([1, "lo"], [2, "eth9"], [3, "eth1"]), true)).toBe(true);
  });

  it("does not trust it once a link was removed (its name stays cached)", () => {
    expect(start().observe(listing([1, "lo"], [3, "eth1"]))).toBe(false);
    expect(start().observe(listing([1, "lo"], [3, "eth1"], [4, "eth0"]), true)).toBe(false);
  });

  it("does not trust an unreadable listing", () => {
    expect(start().observe("[{")).toBe(false);
    expect(start().observe('{"ifindex":1}')).toBe(false);
    expect(start().observe('[{"ifindex":"1","ifname":"lo"}]')).toBe(false);
  });
});

describe("parseListing", () => {
  it("reads index and name of each link", () => {
    expect(parseListing(listing([1, "lo"], [5, 'a b\\"c']))).toEqual(
      new Map([
        [1, "lo"],
        [5, 'a b\\"c'],
      ]),
    );
  });
});
