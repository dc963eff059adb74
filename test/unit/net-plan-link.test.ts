/** planLink (name swap, MTU, ARP, address set, up state) and impliedKernelRoutes, table-driven. */
import { describe, expect, it } from "vitest";
import type { Address, Link } from "../../src/net/model/model";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { type LinkTarget, planLink, swapName } from "../../src/net/plan/plan-link";

const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];
const DOWN = ["BROADCAST", "MULTICAST"];

function link(index: number, name: string, over: Partial<Link> = {}): Link {
  return {
    index,
    name,
    mac: `02:00:00:00:00:${index.toString(16).padStart(2, "0")}`,
    mtu: 1500,
    flags: UP,
    kind: "veth",
    addresses: [],
    ...over,
  };
}

const a = (family: 4 | 6, cidr: string, scope = "global"): Address => {
  const [address = "", prefix = ""] = cidr.split("/");
  return { family, address, prefix: Number(prefix), scope };
};

function target(over: Partial<LinkTarget> = {}): LinkTarget {
  return {
    name: "",
    mtu: 0,
    noarp: false,
    addresses: [],
    up: true,
    exactAddresses: false,
    ...over,
  };
}

describe("planLink: names", () => {
  it("renames a link that is up: down, rename, up at the end", () => {
    const l = link(5, "eth9");
    expect(planLink([l], l, target({ name: "eth0" }))).toEqual([
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "link set dev eth0 up",
    ]);
  });

  it("renames a link that is down without taking it down again", () => {
    const l = link(5, "eth9", { flags: DOWN });
    expect(planLink([l], l, target({ name: "eth0" }))).toEqual([
      "link set dev eth9 name eth0",
      "link set dev eth0 up",
    ]);
  });

  it("keeps the name when the target name is empty or already the link's", () => {
    const l = link(5, "eth0");
    expect(planLink([l], l, target())).toEqual([]);
    expect(planLink([l], l, target({ name: "eth0" }))).toEqual([]);
  });

  it("swaps with a holder that is up: the holder ends with the old name, up again", () => {
    const me = link(5, "eth9");
    const holder = link(3, "eth0");
    expect(planLink([holder, me], me, target({ name: "eth0" }))).toEqual([
      "link set dev eth0 down",
      `link set dev eth0 name ${swapName(3)}`,
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      `link set dev ${swapName(3)} name eth9`,
      "link set dev eth9 up",
      "link set dev eth0 up",
    ]);
  });

  it("swaps with a holder that is down: the holder stays down", () => {
    const me = link(5, "eth9");
    const holder = link(3, "eth0", { flags: DOWN });
    expect(planLink([holder, me], me, target({ name: "eth0" }))).toEqual([
      `link set dev eth0 name ${swapName(3)}`,
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      `link set dev ${swapName(3)} name eth9`,
      "link set dev eth0 up",
    ]);
  });

  it("makes swap names that fit in 15 bytes and start with a letter", () => {
    for (const i of [1, 42, 2 ** 31 - 1]) expect(swapName(i)).toMatch(/^[a-z][a-z0-9-]{0,14}$/);
  });
});

describe("planLink: MTU and ARP", () => {
  it.each([
    [0, 1500, []],
    [1500, 1500, []],
    [9000, 1500, ["link set dev eth0 mtu 9000"]],
    [1280, 9000, ["link set dev eth0 mtu 1280"]],
  ])("mtu %i on a link with %i", (mtu, current, lines) => {
    const l = link(2, "eth0", { mtu: current });
    expect(planLink([l], l, target({ mtu }))).toEqual(lines);
  });

  it.each([
    [true, UP, ["link set dev eth0 arp off"]],
    [false, UP, []],
    [true, [...UP, "NOARP"], []],
    [false, ["BROADCAST", "NOARP", "UP"], ["link set dev eth0 arp on"]],
  ])("noarp %s on flags %j", (noarp, flags, lines) => {
    const l = link(2, "eth0", { flags });
    expect(planLink([l], l, target({ noarp }))).toEqual(lines);
  });

  it("sets MTU and ARP on the new name after a rename", () => {
    const l = link(2, "eth9", { flags: DOWN });
    expect(planLink([l], l, target({ name: "eth0", mtu: 1400, noarp: true }))).toEqual([
      "link set dev eth9 name eth0",
      "link set dev eth0 mtu 1400",
      "link set dev eth0 arp off",
      "link set dev eth0 up",
    ]);
  });
});

describe("planLink: addresses", () => {
  const l = link(2, "eth0", {
    addresses: [
      a(4, "10.0.0.2/24"),
      a(4, "10.0.0.9/24"),
      a(6, "2001:db8::9/64"),
      a(6, "fe80::1/64", "link"),
      a(4, "127.0.0.2/8", "host"),
    ],
  });

  it("removes unrequested global addresses first, keeps link-local and host scope, adds IPv6 with nodad", () => {
    expect(
      planLink(
        [l],
        l,
        target({ addresses: [a(4, "10.0.0.2/24"), a(6, "2001:db8::2/64"), a(4, "10.1.0.2/16")] }),
      ),
    ).toEqual([
      "addr del 2001:db8::9/64 dev eth0",
      "addr del 10.0.0.9/24 dev eth0",
      "addr add 2001:db8::2/64 dev eth0 nodad",
      "addr add 10.1.0.2/16 dev eth0",
    ]);
  });

  it("exact mode removes every address not listed, link-local included", () => {
    expect(
      planLink([l], l, target({ addresses: [a(4, "10.0.0.2/24")], exactAddresses: true })),
    ).toEqual([
      // Reverse order: secondaries before their primary.
      "addr del 127.0.0.2/8 dev eth0",
      "addr del fe80::1/64 dev eth0",
      "addr del 2001:db8::9/64 dev eth0",
      "addr del 10.0.0.9/24 dev eth0",
    ]);
  });

  it("puts back a kept IPv4 address of a subnet that loses one (the kernel drops secondaries with their primary)", () => {
    const two = link(2, "eth0", {
      addresses: [a(4, "10.0.0.2/24"), a(4, "10.0.0.9/24"), a(4, "10.1.0.2/16")],
    });
    expect(
      planLink([two], two, target({ addresses: [a(4, "10.0.0.9/24"), a(4, "10.1.0.2/16")] })),
    ).toEqual(["addr del 10.0.0.2/24 dev eth0", "addr replace 10.0.0.9/24 dev eth0"]);
    // Another subnet, or IPv6, is not touched.
    const v6 = link(2, "eth0", { addresses: [a(6, "2001:db8::2/64"), a(6, "2001:db8::9/64")] });
    expect(planLink([v6], v6, target({ addresses: [a(6, "2001:db8::9/64")] }))).toEqual([
      "addr del 2001:db8::2/64 dev eth0",
    ]);
  });

  it("removes a subnet's secondaries before its primary (the kernel drops them with it)", () => {
    const three = link(2, "eth0", {
      addresses: [a(4, "10.0.0.2/24"), a(4, "10.0.0.9/24"), a(4, "10.0.0.10/24")],
    });
    expect(planLink([three], three, target({ addresses: [a(4, "10.0.0.5/24")] }))).toEqual([
      "addr del 10.0.0.10/24 dev eth0",
      "addr del 10.0.0.9/24 dev eth0",
      "addr del 10.0.0.2/24 dev eth0",
      "addr add 10.0.0.5/24 dev eth0",
    ]);
  });

  it("exact mode gives a subnet its old primary back, rebuilding it in the listed order", () => {
    const swapped = link(2, "eth0", {
      addresses: [a(4, "10.0.0.9/24"), a(4, "10.0.0.2/24"), a(4, "10.1.0.2/16")],
    });
    const want = [a(4, "10.0.0.2/24"), a(4, "10.0.0.9/24"), a(4, "10.1.0.2/16")];
    expect(planLink([swapped], swapped, target({ addresses: want, exactAddresses: true }))).toEqual(
      [
        "addr del 10.0.0.2/24 dev eth0",
        "addr del 10.0.0.9/24 dev eth0",
        "addr add 10.0.0.2/24 dev eth0",
        "addr add 10.0.0.9/24 dev eth0",
      ],
    );
    // A request (not exact) leaves the order alone.
    expect(planLink([swapped], swapped, target({ addresses: want }))).toEqual([]);
  });

  it("treats a changed prefix as another address", () => {
    const one = link(2, "eth0", { addresses: [a(4, "10.0.0.2/24")] });
    expect(planLink([one], one, target({ addresses: [a(4, "10.0.0.2/16")] }))).toEqual([
      "addr del 10.0.0.2/24 dev eth0",
      "addr add 10.0.0.2/16 dev eth0",
    ]);
  });

  it("removes on the old name, adds on the new one and brings the link up at the very end", () => {
    const down = link(2, "eth9", { flags: DOWN, addresses: [a(4, "10.0.0.9/24")] });
    const lines = planLink([down], down, target({ name: "eth0", addresses: [a(6, "fd00::2/64")] }));
    expect(lines).toEqual([
      "addr del 10.0.0.9/24 dev eth9",
      "link set dev eth9 name eth0",
      "addr add fd00::2/64 dev eth0 nodad",
      "link set dev eth0 up",
    ]);
  });

  it("takes a link down when the target says so (restores), only once", () => {
    const up = link(2, "eth0");
    expect(planLink([up], up, target({ up: false }))).toEqual(["link set dev eth0 down"]);
    expect(planLink([up], up, target({ up: false, name: "eth1" }))).toEqual([
      "link set dev eth0 down",
      "link set dev eth0 name eth1",
    ]);
    const down = link(2, "eth0", { flags: DOWN });
    expect(planLink([down], down, target({ up: false }))).toEqual([]);
    expect(planLink([down], down, target())).toEqual(["link set dev eth0 up"]);
  });
});

describe("planLink: what the kernel takes with a down or a low MTU", () => {
  const v6 = [a(4, "10.0.0.2/24"), a(6, "fd00::2/64"), a(6, "fe80::2/64", "link")];

  it("a rename puts back the IPv6 addresses still wanted (replace: keep_addr_on_down may have kept them); IPv4 stays", () => {
    const l = link(2, "eth9", { addresses: v6 });
    const want = [a(4, "10.0.0.2/24"), a(6, "fd00::2/64")];
    expect(planLink([l], l, target({ name: "eth0", addresses: want }))).toEqual([
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "addr replace fd00::2/64 dev eth0 nodad",
      "link set dev eth0 up",
    ]);
  });

  it("removes an IPv6 address before the down that would take it (a later 'addr del' fails)", () => {
    const l = link(2, "eth9", { addresses: v6 });
    expect(planLink([l], l, target({ name: "eth0", addresses: [a(6, "fd00::5/64")] }))).toEqual([
      "addr del fd00::2/64 dev eth9",
      "addr del 10.0.0.2/24 dev eth9",
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "addr add fd00::5/64 dev eth0 nodad",
      "link set dev eth0 up",
    ]);
  });

  it("a holder that was up gets its IPv6 addresses back, link-local aside, before it comes up", () => {
    const me = link(5, "eth9", { flags: DOWN });
    const holder = link(3, "eth0", { addresses: v6 });
    expect(planLink([holder, me], me, target({ name: "eth0" }))).toEqual([
      "link set dev eth0 down",
      `link set dev eth0 name ${swapName(3)}`,
      "link set dev eth9 name eth0",
      `link set dev ${swapName(3)} name eth9`,
      "addr replace fd00::2/64 dev eth9 nodad",
      "link set dev eth9 up",
      "link set dev eth0 up",
    ]);
    // One that was down was not taken down: nothing to put back.
    const downHolder = { ...holder, flags: DOWN };
    expect(planLink([downHolder, me], me, target({ name: "eth0" }))).not.toContainEqual(
      expect.stringMatching(/^addr/),
    );
  });

  it("an MTU below 1280 drops IPv6: the wanted addresses are put back (the kernel refuses: the call fails)", () => {
    const l = link(2, "eth0", { addresses: v6 });
    const want = [a(4, "10.0.0.2/24"), a(6, "fd00::2/64")];
    expect(planLink([l], l, target({ mtu: 1000, addresses: want }))).toEqual([
      "link set dev eth0 mtu 1000",
      "addr replace fd00::2/64 dev eth0 nodad",
    ]);
    expect(planLink([l], l, target({ mtu: 1280, addresses: want }))).toEqual([
      "link set dev eth0 mtu 1280",
    ]);
  });

  it("puts an address back as it was: noprefixroute, metric", () => {
    const l = link(2, "eth9", {
      addresses: [{ ...a(6, "fd00::2/64"), noprefixroute: true, metric: 77 }],
    });
    expect(planLink([l], l, target({ name: "eth0", addresses: [a(6, "fd00::2/64")] }))).toContain(
      "addr replace fd00::2/64 metric 77 noprefixroute dev eth0 nodad",
    );
  });

  it("a restore that takes a link down does it first and puts back every IPv6 address after, link-local too", () => {
    // Without nodad: on a link that stays down an address is tentative, as the kernel has it there.
    const l = link(2, "eth9", { addresses: v6 });
    expect(
      planLink([l], l, target({ name: "eth0", up: false, addresses: v6, exactAddresses: true })),
    ).toEqual([
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "addr replace fd00::2/64 dev eth0",
      "addr replace fe80::2/64 dev eth0",
    ]);
    expect(planLink([l], l, target({ up: false, addresses: v6, exactAddresses: true }))).toEqual([
      "link set dev eth9 down",
      "addr replace fd00::2/64 dev eth9",
      "addr replace fe80::2/64 dev eth9",
    ]);
  });
});

describe("impliedKernelRoutes", () => {
  const kv4 = (dst: string, dev: string, prefsrc: string) => ({
    family: 4,
    dst,
    dev,
    prefsrc,
    scope: 253,
    metric: 0,
    onlink: false,
    mtu: 0,
    protocol: "kernel",
    type: "unicast",
  });
  const kv6 = (dst: string, dev: string) => ({
    family: 6,
    dst,
    dev,
    scope: 0,
    metric: 256,
    onlink: false,
    mtu: 0,
    protocol: "kernel",
    type: "unicast",
  });

  it("makes one IPv4 subnet route per subnet and link, from the first address, host bits clear", () => {
    const l = link(2, "eth0", {
      addresses: [a(4, "10.0.0.9/24"), a(4, "10.0.0.2/24"), a(4, "192.168.157.204/20")],
    });
    expect(impliedKernelRoutes([l])).toEqual([
      kv4("10.0.0.0/24", "eth0", "10.0.0.9"),
      kv4("192.168.144.0/20", "eth0", "192.168.157.204"),
    ]);
  });

  it("makes IPv6 prefix routes with metric 256, link-local included", () => {
    const l = link(2, "eth0", {
      addresses: [a(6, "2001:db8::2/64"), a(6, "fe80::1/64", "link"), a(6, "fd00::1:2/48")],
    });
    expect(impliedKernelRoutes([l])).toEqual([
      kv6("2001:db8::/64", "eth0"),
      kv6("fe80::/64", "eth0"),
      kv6("fd00::/48", "eth0"),
    ]);
  });

  it("skips lo, links that are down, IPv4 /32 without a peer, and noprefixroute addresses", () => {
    const lo = link(1, "lo", { addresses: [a(4, "127.0.0.1/8")] });
    const down = link(3, "eth1", { flags: DOWN, addresses: [a(4, "10.1.0.2/24")] });
    const l = link(2, "eth0", {
      addresses: [
        a(4, "172.16.0.1/32"),
        { ...a(4, "192.168.9.9/24"), noprefixroute: true },
        { ...a(6, "2001:db8:9::9/64"), noprefixroute: true },
      ],
    });
    expect(impliedKernelRoutes([lo, down, l])).toEqual([]);
  });

  it("makes an IPv6 /128 its own route (the Calico shape), and a peer its /128", () => {
    const l = link(2, "eth0", {
      addresses: [a(6, "fd00:10:65::11/128"), { ...a(6, "fd00:1::1/64"), peer: "fd00:4::" }],
    });
    expect(impliedKernelRoutes([l])).toEqual([
      kv6("fd00:10:65::11/128", "eth0"),
      kv6("fd00:1::/64", "eth0"),
      kv6("fd00:4::/128", "eth0"),
    ]);
  });

  it("routes an IPv4 peer's network from the local address, skips secondaries, honours metrics", () => {
    const l = link(2, "eth0", {
      addresses: [
        { ...a(4, "10.0.0.1/32"), peer: "10.0.0.2" },
        { ...a(4, "10.3.0.1/24"), peer: "10.9.0.5" },
        { ...a(4, "10.5.0.1/24"), metric: 50 },
        { ...a(4, "10.5.0.2/24"), secondary: true },
        { ...a(6, "fd00:2::1/64"), metric: 77 },
        a(6, "fd00:2::2/64"),
      ],
    });
    expect(impliedKernelRoutes([l])).toEqual([
      kv4("10.0.0.2/32", "eth0", "10.0.0.1"),
      kv4("10.9.0.0/24", "eth0", "10.3.0.1"),
      { ...kv4("10.5.0.0/24", "eth0", "10.5.0.1"), metric: 50 },
      { ...kv6("fd00:2::/64", "eth0"), metric: 77 },
      kv6("fd00:2::/64", "eth0"),
    ]);
  });

  it("keeps the same subnet on two links as two routes", () => {
    const l0 = link(2, "eth0", { addresses: [a(4, "10.0.0.2/24"), a(6, "fe80::2/64", "link")] });
    const l1 = link(3, "eth1", { addresses: [a(4, "10.0.0.3/24"), a(6, "fe80::3/64", "link")] });
    expect(impliedKernelRoutes([l0, l1])).toEqual([
      kv4("10.0.0.0/24", "eth0", "10.0.0.2"),
      kv6("fe80::/64", "eth0"),
      kv4("10.0.0.0/24", "eth1", "10.0.0.3"),
      kv6("fe80::/64", "eth1"),
    ]);
  });
});
