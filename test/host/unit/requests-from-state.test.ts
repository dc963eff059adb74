/** requestsFromState: a namespace's state to the requests the Kata runtime sends (§5.2). */
import { toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ARPNeighborSchema, InterfaceSchema, RouteSchema } from "../../../src/gen/types_pb";
import { requestsFromState } from "../../../src/host/pod/pod-requests";
import type { Link, Neighbor, NetState } from "../../../src/net/model/model";
import { route } from "../../support/routes";

const link = (over: Partial<Link>): Link => ({
  index: 2,
  name: "eth0",
  mac: "62:f5:74:89:88:1f",
  mtu: 1500,
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  kind: "veth",
  addresses: [
    { family: 4, address: "10.248.246.146", prefix: 28, scope: "global" },
    { family: 6, address: "fe80::60f5:74ff:fe89:881f", prefix: 64, scope: "link" },
  ],
  ...over,
});

const neigh = (over: Partial<Neighbor>): Neighbor => ({
  family: 4,
  ip: "10.248.246.145",
  dev: "eth0",
  lladdr: "96:5d:13:71:f3:0a",
  state: ["REACHABLE"],
  router: false,
  ...over,
});

/** The ptp pod of DESIGN.md, plus the things that must be left out. */
const state: NetState = {
  links: [
    link({
      index: 1,
      name: "lo",
      mac: "00:00:00:00:00:00",
      flags: ["LOOPBACK", "UP"],
      kind: "",
      addresses: [{ family: 4, address: "127.0.0.1", prefix: 8, scope: "host" }],
    }),
    link({}),
    link({ index: 3, name: "sit0", mac: "00:00:00:00", kind: "sit", addresses: [] }),
    link({
      index: 4,
      name: "net1",
      mac: "02:00:00:00:00:09",
      mtu: 9000,
      flags: ["NOARP", "UP", "POINTOPOINT"],
      addresses: [{ family: 6, address: "2001:db8::9", prefix: 64, scope: "global" }],
    }),
    link({ index: 5, name: "idle0", mac: "02:00:00:00:00:0a", addresses: [] }),
  ],
  routes: [
    route({ gateway: "10.248.246.145" }),
    route({ dst: "10.248.246.144/28", gateway: "10.248.246.145", prefsrc: "10.248.246.146" }),
    route({ dst: "10.248.246.145/32", prefsrc: "10.248.246.146", scope: 253 }),
    route({ family: 6, dst: "fe80::/64", metric: 256, protocol: "kernel" }),
    route({
      family: 6,
      dst: "::/0",
      gateway: "2001:db8::1",
      dev: "net1",
      metric: 1024,
      onlink: true,
      mtu: 1400,
    }),
    route({ dst: "127.0.0.0/8", dev: "lo" }),
    route({ dst: "192.0.2.0/24", dev: "idle0" }),
  ],
  neighbors: [
    neigh({}),
    neigh({ ip: "10.248.246.150", lladdr: "02:00:00:00:00:01" }),
    neigh({
      ip: "10.248.246.151",
      lladdr: "02:00:00:00:00:02",
      state: ["PERMANENT"],
      router: true,
    }),
    neigh({ ip: "10.248.246.152", lladdr: "", state: ["PERMANENT"] }),
    neigh({
      ip: "2001:db8::1",
      family: 6,
      dev: "net1",
      lladdr: "02:00:00:00:00:03",
      state: ["STALE"],
    }),
    neigh({ ip: "127.0.0.2", dev: "lo", state: ["PERMANENT"] }),
  ],
};

describe("requestsFromState", () => {
  const r = requestsFromState(state);

  it("one Interface per link but lo, with MAC, MTU, every address and only NOARP of the flags", () => {
    expect(r.interfaces.map((i) => toJson(InterfaceSchema, i))).toEqual([
      {
        device: "eth0",
        name: "eth0",
        IPAddresses: [
          { address: "10.248.246.146", mask: "28" },
          { family: "v6", address: "fe80::60f5:74ff:fe89:881f", mask: "64" },
        ],
        mtu: "1500",
        hwAddr: "62:f5:74:89:88:1f",
        type: "veth",
      },
      {
        device: "net1",
        name: "net1",
        IPAddresses: [{ family: "v6", address: "2001:db8::9", mask: "64" }],
        mtu: "9000",
        hwAddr: "02:00:00:00:00:09",
        type: "veth",
        rawFlags: 0x80,
      },
    ]);
    expect(r.skipped).toEqual([
      { name: "sit0", why: "no Ethernet MAC" },
      { name: "idle0", why: "no addresses" },
    ]);
  });

  it("routes of both families on synced links, proto kernel left out, default as an empty dest", () => {
    expect(r.routes.map((x) => toJson(RouteSchema, x))).toEqual([
      { gateway: "10.248.246.145", device: "eth0" },
      {
        dest: "10.248.246.144/28",
        gateway: "10.248.246.145",
        device: "eth0",
        source: "10.248.246.146",
      },
      { dest: "10.248.246.145/32", device: "eth0", source: "10.248.246.146", scope: 253 },
      { gateway: "2001:db8::1", device: "net1", family: "v6", flags: 4, mtu: 1400 },
    ]);
  });

  it("neighbours: permanent with a MAC, or the default gateway while reachable", () => {
    expect(r.neighbors.map((n) => toJson(ARPNeighborSchema, n))).toEqual([
      {
        toIPAddress: { address: "10.248.246.145" },
        device: "eth0",
        lladdr: "96:5d:13:71:f3:0a",
        state: 2,
      },
      {
        toIPAddress: { address: "10.248.246.151" },
        device: "eth0",
        lladdr: "02:00:00:00:00:02",
        state: 128,
        flags: 128,
      },
    ]);
  });

  it("an empty namespace asks for nothing", () => {
    expect(requestsFromState({ links: [], routes: [], neighbors: [] })).toEqual({
      interfaces: [],
      routes: [],
      neighbors: [],
      skipped: [],
    });
  });

  it("two links of one MAC: neither is sent (the guest finds NICs by MAC), both skipped naming the MAC", () => {
    const r = requestsFromState({
      links: [
        link({ index: 2, name: "eth0" }),
        link({ index: 3, name: "tap0", kind: "tun", mac: "02:00:00:00:00:09" }),
        link({ index: 4, name: "eth1", kind: "macvlan", mac: "02:00:00:00:00:09" }),
      ],
      routes: [
        route({ dst: "10.9.0.0/24", dev: "tap0" }),
        route({ dst: "10.8.0.0/24", dev: "eth1" }),
      ],
      neighbors: [],
    });
    expect(r.interfaces.map((i) => i.name)).toEqual(["eth0"]);
    expect(r.routes).toEqual([]);
    expect(r.skipped).toEqual([
      { name: "tap0", why: "shares MAC 02:00:00:00:00:09 with eth1" },
      { name: "eth1", why: "shares MAC 02:00:00:00:00:09 with tap0" },
    ]);
  });
});
