/**
 * mirror-scope.ts: what of a pod one Apply cannot carry is left out, each
 * with a line saying what and why; the rest goes as read.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { StateSchema } from "../../../src/gen/network_pb";
import type { PodFullState } from "../../../src/host/pod/pod-state";
import { describeField, scopeMirror } from "../../../src/host/sync/mirror-scope";
import type { Link, Route } from "../../../src/net/model/model";

const link = (name: string, mac: string, kind = "veth"): Link => ({
  index: name.length,
  name,
  mac,
  mtu: 1500,
  flags: ["UP"],
  kind,
  addresses: [{ family: 4, address: "10.9.0.1", prefix: 24, scope: "global" }],
});

const route = (dst: string, dev: string, over: Partial<Route> = {}): Route => ({
  family: 4,
  table: 254,
  dst,
  dev,
  scope: 253,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
  ...over,
});

const pod: PodFullState = {
  links: [
    link("lo", "00:00:00:00:00:00", ""),
    link("eth0", "02:00:00:00:00:01"),
    link("tun0", "", "tun"),
  ],
  routes: [
    route("10.1.0.0/24", "eth0"),
    route("10.99.0.0/16", "tun0"),
    route("10.9.0.1/32", "tun0", { table: 255, protocol: "kernel", type: "local", scope: 254 }),
    route("10.7.0.0/16", "eth0", { table: 200, type: "xresolve" }),
    // Carried: a local route in a user table, multipath, a nexthop object.
    route("10.8.0.0/16", "eth0", { table: 200, type: "local", scope: 254 }),
    route("10.6.0.0/16", "", {
      scope: 0,
      hops: [
        { gateway: "10.1.0.1", dev: "eth0", weight: 1, onlink: false },
        { gateway: "10.9.0.9", dev: "tun0", weight: 1, onlink: false },
      ],
    }),
    route("10.5.0.0/16", "", { scope: 0, nhid: 3 }),
    route("10.4.0.0/16", "", { scope: 0, nhid: 4 }),
  ],
  nexthops: [
    {
      id: 3,
      family: 4,
      gateway: "10.9.0.9",
      dev: "tun0",
      onlink: false,
      blackhole: false,
      protocol: "unspec",
    },
    {
      id: 4,
      family: 4,
      gateway: "10.1.0.1",
      dev: "eth0",
      onlink: false,
      blackhole: false,
      protocol: "unspec",
    },
  ],
  rules: [
    { family: 4, priority: 100, not: false, iif: "tun0", action: "lookup", table: 100 },
    { family: 4, priority: 101, not: false, action: "lookup", table: 100, other: ["ipproto=6"] },
  ],
  neighbors: [
    {
      family: 4,
      ip: "10.9.0.7",
      dev: "tun0",
      lladdr: "02:00:00:00:00:07",
      state: ["PERMANENT"],
      router: false,
    },
    {
      family: 4,
      ip: "10.1.0.7",
      dev: "eth0",
      lladdr: "02:00:00:00:00:08",
      state: ["PERMANENT"],
      router: false,
    },
  ],
  sysctls: [
    { key: "net.ipv4.conf.tun0.rp_filter", value: "2" },
    { key: "net.ipv4.conf.eth0.rp_filter", value: "2" },
  ],
  allSysctls: new Map(),
};

describe("scopeMirror", () => {
  const { pod: sent, leftOut } = scopeMirror(pod);

  it("leaves out a link without a MAC with its routes, neighbours and sysctls; keeps rules naming it", () => {
    expect(sent.links.map((l) => l.name)).toEqual(["lo", "eth0"]);
    expect(sent.routes.map((r) => r.dst)).toEqual([
      "10.1.0.0/24",
      "10.7.0.0/16",
      "10.8.0.0/16",
      "10.4.0.0/16",
    ]);
    expect(sent.nexthops?.map((n) => n.id)).toEqual([4]);
    expect(sent.neighbors.map((n) => n.ip)).toEqual(["10.1.0.7"]);
    expect(sent.sysctls.map((s) => s.key)).toEqual(["net.ipv4.conf.eth0.rp_filter"]);
    expect(sent.rules.map((r) => r.priority)).toEqual([100]);
  });

  it("lists each, with why; the kernel's own routes of table local are not listed", () => {
    expect(leftOut).toEqual([
      "interface tun0: no MAC address (a tun device): the guest finds its NICs by MAC and has no twin of it",
      "nexthop id 3 dev tun0: its device tun0 is not mirrored",
      "route 10.99.0.0/16 dev tun0 scope link: its device tun0 is not mirrored",
      "route xresolve 10.7.0.0/16 dev eth0 scope link table 200: netagent.v1 does not carry routes of type xresolve",
      "route 10.6.0.0/16 nexthop via 10.1.0.1 dev eth0 weight 1 nexthop via 10.9.0.9 dev tun0 weight 1: its device tun0 is not mirrored",
      "route 10.5.0.0/16 nhid 3: its nexthop object 3 is not mirrored",
      "rule 101 (v4): not carried: ipproto=6",
      "neighbour 10.9.0.7 dev tun0 lladdr 02:00:00:00:00:07: its device tun0 is not mirrored",
      "sysctl net.ipv4.conf.tun0.rp_filter = 2: its device tun0 is not mirrored",
    ]);
  });
});

describe("describeField", () => {
  const state = create(StateSchema, {
    interfaces: [
      {
        mac: "02:00:00:00:00:01",
        name: "eth0",
        mtu: 9000,
        addresses: [{ address: "fd00::2", prefix: 64 }],
      },
    ],
    routes: [{ table: 100, dest: "198.51.100.0/24", gateway: "203.0.113.1", device: "eth0" }],
    sysctls: [{ key: "net.ipv4.ip_local_port_range", value: "50000 1000" }],
  });

  it("names the element of a field in words", () => {
    expect(describeField(state, "desired.routes[0]")).toBe(
      "route 198.51.100.0/24 via 203.0.113.1 dev eth0 table 100",
    );
    expect(describeField(state, "desired.interfaces[0].addresses[0]")).toBe(
      "address fd00::2/64 on eth0",
    );
    expect(describeField(state, "desired.interfaces[0].mtu")).toBe("interface eth0: mtu 9000");
    expect(describeField(state, "desired.sysctls[0]")).toBe(
      "sysctl net.ipv4.ip_local_port_range = 50000 1000",
    );
    expect(describeField(state, "desired.routes[7]")).toBe("desired.routes[7]");
  });
});

describe("scopeMirror: endpoints as Kata makes them", () => {
  const tap = (name: string, mac: string, mode: "tap" | "tun"): Link => ({
    ...link(name, mac, "tun"),
    tuntap: { mode, multiQueue: false, pi: false, vnetHdr: false, persist: false },
  });
  const base: PodFullState = {
    ...pod,
    links: [],
    routes: [],
    nexthops: [],
    rules: [],
    neighbors: [],
    sysctls: [],
  };

  it("a tap with a MAC is the VM's NIC: sent as an interface found by MAC, never made; a tun is still made", () => {
    const { pod: sent, leftOut } = scopeMirror({
      ...base,
      links: [
        link("eth0", "02:00:00:00:00:01"),
        tap("tap0", "02:00:00:00:00:02", "tap"),
        tap("tun0", "", "tun"),
      ],
    });
    expect(sent.links.map((l) => [l.name, l.mac, l.tuntap?.mode])).toEqual([
      ["eth0", "02:00:00:00:00:01", undefined],
      ["tap0", "02:00:00:00:00:02", undefined],
      ["tun0", "", "tun"],
    ]);
    // Only the tun (made in the guest, persistent there) is named for its persistence.
    expect(leftOut).toEqual([
      "interface tun0: not persistent in the pod (a process holds it); the guest's is persistent",
    ]);
  });

  it("two links of one MAC: both left out, naming the MAC, with what goes through them", () => {
    const { pod: sent, leftOut } = scopeMirror({
      ...base,
      links: [
        link("eth0", "02:00:00:00:00:01"),
        tap("tap0", "02:00:00:00:00:09", "tap"),
        link("eth1", "02:00:00:00:00:09", "macvlan"),
      ],
      routes: [
        route("10.1.0.0/24", "eth0"),
        route("10.2.0.0/24", "eth1"),
        route("10.3.0.0/24", "tap0"),
      ],
    });
    expect(sent.links.map((l) => l.name)).toEqual(["eth0"]);
    expect(sent.routes.map((r) => r.dst)).toEqual(["10.1.0.0/24"]);
    expect(leftOut).toEqual([
      "interface tap0: shares MAC 02:00:00:00:00:09 with eth1: the guest finds its NICs by MAC and cannot tell them apart",
      "interface eth1: shares MAC 02:00:00:00:00:09 with tap0: the guest finds its NICs by MAC and cannot tell them apart",
      "route 10.2.0.0/24 dev eth1 scope link: its device eth1 is not mirrored",
      "route 10.3.0.0/24 dev tap0 scope link: its device tap0 is not mirrored",
    ]);
  });

  it("a link no runtime makes a NIC of, and the guest has none of its MAC: left out with why; one the guest has is configured", () => {
    const bare = { ...link("eth1", "02:00:00:00:00:03"), addresses: [] };
    const bridge = link("br0", "02:00:00:00:00:04", "bridge");
    const { pod: sent, leftOut } = scopeMirror(
      {
        ...base,
        links: [link("eth0", "02:00:00:00:00:01"), bare, bridge, link("eth2", "02:00:00:00:00:05")],
        routes: [route("10.4.0.0/24", "br0")],
      },
      new Set(["02:00:00:00:00:01"]),
    );
    // eth2 is a veth with addresses: a NIC still being hot-plugged, waited for by Apply.
    expect(sent.links.map((l) => l.name)).toEqual(["eth0", "eth2"]);
    expect(leftOut).toEqual([
      "interface eth1: no addresses (a runtime makes no NIC of an unconfigured link) and the guest has no NIC with its MAC 02:00:00:00:00:03",
      "interface br0: a bridge device (a runtime makes no NIC of it) and the guest has no NIC with its MAC 02:00:00:00:00:04",
      "route 10.4.0.0/24 dev br0 scope link: its device br0 is not mirrored",
    ]);
    const withNics = scopeMirror(
      { ...base, links: [bare, bridge] },
      new Set(["02:00:00:00:00:03", "02:00:00:00:00:04"]),
    );
    expect(withNics.pod.links.map((l) => l.name)).toEqual(["eth1", "br0"]);
    expect(withNics.leftOut).toEqual([]);
  });
});
