/**
 * A hostile host's requests against a guest mirroring the CNI ptp pod, each
 * built from the pod's own set-up (what a shim or sync would send) with one
 * malicious change, and the policy rule that must refuse it (or, where the
 * agent's validation refuses it first, `validation`). Kata requests go
 * through containerd's Go ttrpc client, Apply ones too (same wire).
 */
import { create } from "@bufbuild/protobuf";
import {
  AddressSchema,
  type ApplyRequest,
  AttrSchema,
  NeighborSchema,
  InterfaceSchema as NetInterfaceSchema,
  RuleSchema,
  type State,
  SysctlSchema,
} from "../../src/gen/network_pb";
import { IPAddressSchema, IPFamily } from "../../src/gen/types_pb";
import type { SyncRequests } from "../../src/host/pod/pod-requests";
import { type Builders, corpusBuilders, type Hostile } from "./policy-corpus-builders";

const NOARP = 0x80;

/** The corpus for a pod whose Kata set-up is `kata` and whose Apply is `apply`; `gw` its gateway. */
export function hostileCorpus(kata: SyncRequests, apply: ApplyRequest, gw: string): Hostile[] {
  const b = corpusBuilders(kata, apply, gw);
  kataCases(b, gw);
  applyLinkCases(b, gw);
  applyTableCases(b);
  return b.out;
}

/** A State's main table, and its default route. */
const main = (s: State) => s.routes.filter((r) => r.table === 254 || r.table === 0);
const defaultOf = (s: State) => main(s).find((r) => r.dest === "0.0.0.0/0");

/** The Kata methods: UpdateRoutes, UpdateInterface, AddARPNeighbors, SetIPTables. */
function kataCases(b: Builders, gw: string): void {
  const { iface, routes, route, neigh, filter, v4 } = b;
  routes("default route via a foreign gateway, onlink", "routes.gateways", (r) => [
    ...r.filter((x) => x.dest !== "0.0.0.0/0" && x.dest !== ""),
    route("", { gateway: "192.0.2.1", flags: 4 }),
  ]);
  routes("two /1 routes around the default", "routes.destinations", (r) => [
    ...r,
    route("0.0.0.0/1"),
    route("128.0.0.0/1"),
  ]);
  routes("the subnet to a foreign gateway", "routes.gateways", (r) =>
    r.map((x) => (x.dest.endsWith("/28") ? { ...x, gateway: "10.248.246.150" } : x)),
  );
  routes("a route with source 127.0.0.1", "routes.sources", (r) =>
    r.map((x) => (x.gateway !== "" ? { ...x, source: "127.0.0.1" } : x)),
  );
  routes("an extra destination", "routes.destinations", (r) => [...r, route("198.51.100.0/24")]);
  routes("a route through lo", "validation", (r) => [
    ...r,
    route("203.0.113.0/24", { gateway: "", device: "lo", scope: 253 }),
  ]);
  routes("a host-scope route", "routes.scopes", (r) => [
    ...r,
    route("203.0.113.9/32", { gateway: "", scope: 254 }),
  ]);
  routes("an IPv6 default route", "routes.destinations", (r) => [
    ...r,
    route("::/0", { gateway: "fe80::1", family: IPFamily.v6 }),
  ]);
  iface("an extra address", "addresses.perInterface", (i) =>
    i.IPAddresses.push(
      create(IPAddressSchema, { family: IPFamily.v4, address: "10.248.246.147", mask: "28" }),
    ),
  );
  iface("a foreign address", "addresses.ipv4", (i) => {
    i.IPAddresses = i.IPAddresses.map((a) =>
      v4(a) ? { ...a, address: "192.0.2.5", mask: "24" } : a,
    );
  });
  iface("the pod's address swapped", "addresses.ipv4", (i) => {
    i.IPAddresses = i.IPAddresses.map((a) => (v4(a) ? { ...a, address: "10.248.246.150" } : a));
  });
  iface("the pod's address widened to /8", "addresses.ipv4", (i) => {
    i.IPAddresses = i.IPAddresses.map((a) => (v4(a) ? { ...a, mask: "8" } : a));
  });
  iface("NOARP", "interfaces.flags", (i) => {
    i.rawFlags = NOARP;
  });
  iface("MTU 65535", "interfaces.mtu", (i) => {
    i.mtu = 65535n;
  });
  iface("MTU 68", "validation", (i) => {
    i.mtu = 68n;
  });
  iface("a rename to lo", "validation", (i) => {
    i.name = "lo";
  });
  iface("a rename to evil0", "interfaces.names", (i) => {
    i.name = "evil0";
  });
  iface("a hot-plugged NIC not in the policy", "interfaces.macs", (i) => {
    i.hwAddr = "02:aa:bb:cc:dd:ee";
    i.name = "eth1";
    i.IPAddresses = [
      create(IPAddressSchema, { family: IPFamily.v4, address: "10.248.246.146", mask: "28" }),
    ];
  });
  neigh("the gateway pinned to a foreign lladdr", "neighbours.ips", gw, "02:66:66:66:66:66");
  neigh("a far address pinned", "neighbours.ips", "8.8.8.8", "02:66:66:66:66:66");
  neigh("the gateway, state reachable", "neighbours.ips", gw, "02:66:66:66:66:66", 2);
  filter(
    "a DNAT of all traffic",
    "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -p tcp -j DNAT --to-destination 192.0.2.1\nCOMMIT\n",
  );
  filter(
    "a filter table dropping all",
    "*filter\n:INPUT DROP [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n",
  );
}

/** Apply: routes, addresses, interfaces and neighbours. */
function applyLinkCases(b: Builders, gw: string): void {
  const { applied, v4 } = b;
  applied("default route via a foreign gateway", "routes.gateways", (s) => {
    const d = defaultOf(s);
    if (d) {
      d.gateway = "192.0.2.1";
      d.onlink = true;
    }
  });
  applied("two /1 routes around the default", "routes.destinations", (s) => {
    const d = defaultOf(s);
    if (d) s.routes.push({ ...d, dest: "0.0.0.0/1" }, { ...d, dest: "128.0.0.0/1" });
  });
  applied("an address outside the pod's prefixes", "addresses.ipv4", (s) => {
    const i = s.interfaces[0];
    if (i)
      i.addresses = i.addresses.map((a) =>
        v4(a) ? { ...a, address: "192.0.2.5", prefix: 24 } : a,
      );
  });
  applied("an extra address", "addresses.perInterface", (s) => {
    s.interfaces[0]?.addresses.push(
      create(AddressSchema, { address: "10.248.246.147", prefix: 28 }),
    );
  });
  applied("a changed MAC", "interfaces.macs", (s) => {
    const i = s.interfaces[0];
    if (i) i.mac = "02:aa:bb:cc:dd:ef";
  });
  applied("a rename to evil0", "interfaces.names", (s) => {
    const i = s.interfaces[0];
    if (i) {
      const old = i.name;
      i.name = "evil0";
      for (const r of s.routes) if (r.device === old) r.device = "evil0";
    }
  });
  applied("NOARP", "interfaces.flags", (s) => {
    const i = s.interfaces[0];
    if (i) i.noarp = true;
  });
  applied("promisc on", "interfaces.flags", (s) => {
    const i = s.interfaces[0];
    const attr = i?.attrs.find((a) => a.name === "promisc");
    if (attr) attr.value = "on";
    else i?.attrs.push(create(AttrSchema, { name: "promisc", value: "on" }));
  });
  applied("MTU 68", "validation", (s) => {
    const i = s.interfaces[0];
    if (i) i.mtu = 68;
  });
  applied("MTU 65535", "interfaces.mtu", (s) => {
    const i = s.interfaces[0];
    if (i) i.mtu = 65535;
  });
  applied("the gateway's neighbour with a foreign lladdr", "neighbours.ips", (s) => {
    s.neighbors.push(
      create(NeighborSchema, {
        address: gw,
        device: s.interfaces[0]?.name ?? "eth0",
        lladdr: "02:66:66:66:66:66",
        router: false,
        attrs: [],
      }),
    );
  });
  applied("a route through lo", "validation", (s) => {
    const d = defaultOf(s);
    if (d) s.routes.push({ ...d, dest: "203.0.113.0/24", gateway: "", device: "lo", scope: 253 });
  });
}

/** Apply: tables and rules, sysctls, route types, tun devices, sources, NICs. */
function applyTableCases(b: Builders): void {
  const { applied } = b;
  applied("a new table and a rule steering into it", "routes.tables", (s) => {
    const d = defaultOf(s);
    if (d) s.routes.push({ ...d, table: 100, gateway: "192.0.2.1", onlink: true });
    s.rules.push(
      create(RuleSchema, {
        priority: 100,
        family: 4,
        from: "",
        to: "",
        iif: "",
        oif: "",
        fwmark: 0,
        fwmask: 0,
        table: 100,
        action: 0,
        not: false,
        attrs: [],
      }),
    );
  });
  applied("a rule steering marked traffic", "rules.allowed", (s) => {
    s.rules.push(
      create(RuleSchema, {
        priority: 100,
        family: 4,
        from: "",
        to: "",
        iif: "",
        oif: "",
        fwmark: 1,
        fwmask: 0xffffffff,
        table: 254,
        action: 0,
        not: false,
        attrs: [],
      }),
    );
  });
  applied("the kernel's default rules removed", "rules.allowed", (s) => {
    s.rules = [];
  });
  applied("ip_forward on", "sysctls", (s) => {
    s.sysctls.push(create(SysctlSchema, { key: "net.ipv4.ip_forward", value: "1" }));
  });
  applied("rp_filter off", "sysctls", (s) => {
    s.sysctls.push(
      create(SysctlSchema, {
        key: `net.ipv4.conf.${s.interfaces[0]?.name}.rp_filter`,
        value: "0",
      }),
    );
  });
  applied("accept_ra 2", "sysctls", (s) => {
    s.sysctls.push(
      create(SysctlSchema, {
        key: `net.ipv6.conf.${s.interfaces[0]?.name}.accept_ra`,
        value: "2",
      }),
    );
  });
  applied("a blackhole route", "routes.types", (s) => {
    const d = defaultOf(s);
    if (d)
      s.routes.push({ ...d, dest: "198.51.100.0/24", gateway: "", device: "", type: 1, scope: 0 });
  });
  applied("a tun device", "tuntap.names", (s) => {
    s.interfaces.push(
      create(NetInterfaceSchema, {
        mac: "",
        name: "tun9",
        mtu: 0,
        addresses: [],
        noarp: false,
        up: true,
        attrs: [],
        tuntap: { mode: "tun", multiQueue: false, pi: false, vnetHdr: false, persist: true },
      }),
    );
  });
  applied("a route with source 127.0.0.1", "routes.sources", (s) => {
    const d = defaultOf(s);
    if (d) d.source = "127.0.0.1";
  });
  applied("a hot-plugged NIC not in the policy", "interfaces.macs", (s) => {
    s.interfaces.push(
      create(NetInterfaceSchema, {
        mac: "02:aa:bb:cc:dd:ee",
        name: "eth1",
        mtu: 1500,
        addresses: [{ address: "192.0.2.7", prefix: 24 }],
        noarp: false,
        up: true,
        attrs: [],
      }),
    );
  });
}
