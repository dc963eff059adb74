/**
 * The split of an Apply's link lines (src/agent/apply/raised-links.ts):
 * IPv6 address lines that follow their link's `up` wait for the link to be
 * ready; everything else runs first, in its order. Pure; the kernel side
 * is proven by test/host/diff-source-order and sync-kernel-consequences.
 */
import { describe, expect, it } from "vitest";
import { deferIpv6 } from "../../src/agent/apply/raised-links";
import type { Link } from "../../src/net/model/model";
import { planLink } from "../../src/net/plan/plan-link";

describe("deferIpv6", () => {
  it("holds back the IPv6 address lines after a link's up, and names the links raised", () => {
    const lines = [
      "link set dev gst0 down",
      "link set dev gst0 name eth0",
      "addr add 10.1.0.2/24 dev eth0",
      "link set dev eth0 up",
      "addr replace fe80::1/64 dev eth0 nodad",
      "addr replace 2001:db8::2/64 dev eth0 nodad",
      "link set dev gst1 down",
      "link set dev gst1 name eth1",
      "addr add 2001:db8:1::2/64 dev eth1",
      "link set dev eth1 up",
    ];
    const { first, raised } = deferIpv6(lines);
    expect(first).toEqual([
      "link set dev gst0 down",
      "link set dev gst0 name eth0",
      "addr add 10.1.0.2/24 dev eth0",
      "link set dev eth0 up",
      "link set dev gst1 down",
      "link set dev gst1 name eth1",
      // Put while the link is down: before its up, in the batch's order.
      "addr add 2001:db8:1::2/64 dev eth1",
      "link set dev eth1 up",
    ]);
    expect(raised).toEqual(["eth0", "eth1"]);
  });

  it("leaves lines as they are when nothing follows an up (no wait)", () => {
    const lines = ["link set dev eth0 mtu 1400", "addr replace fe80::1/64 dev eth0 nodad"];
    expect(deferIpv6(lines)).toEqual({ first: lines, raised: [] });
  });

  it("splits what planLink writes for a renamed NIC with an IPv6 link-local", () => {
    const link: Link = {
      index: 2,
      name: "gst0",
      mac: "02:00:00:00:00:01",
      mtu: 1500,
      flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
      kind: "veth",
      addresses: [],
    };
    const lines = planLink([link], link, {
      name: "eth0",
      mtu: 1500,
      up: true,
      noarp: false,
      exactAttrs: true,
      exactAddresses: true,
      addresses: [
        { family: 4, address: "10.1.0.2", prefix: 24, scope: "global" },
        { family: 6, address: "fe80::1", prefix: 64, scope: "link" },
      ],
    } as Parameters<typeof planLink>[2]);
    const { first, raised } = deferIpv6(lines);
    expect(raised).toEqual(["eth0"]);
    expect(first.some((l) => l.includes("fe80::1"))).toBe(false);
    expect(first.filter((l) => l.startsWith("link set"))).toEqual(
      lines.filter((l) => l.startsWith("link set")),
    );
    expect(lines.filter((l) => !first.includes(l))).toEqual([
      expect.stringMatching(/^addr (add|replace) fe80::1\/64 .*dev eth0 nodad$/),
    ]);
  });
});
