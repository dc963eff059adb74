/**
 * impliedKernelRoutes, table-driven: the prefix routes the kernel makes
 * for a link's addresses (IPv4 subnet routes, IPv6 prefix routes, peers,
 * what it skips).
 */
import { describe, expect, it } from "vitest";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { a, DOWN, link } from "../helpers/plan-link";

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
