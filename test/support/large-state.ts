/**
 * Bench row 12's large state (bench/rows/large-state.ts): 10,000
 * routes over tables main, 100, 200 and 300 (100 multipath routes of two
 * hops, 200 by nexthop objects: 20 single objects and 5 groups of three),
 * 100 rules, two interfaces. Also that state as Get answers it after the
 * first Apply, built without a guest (the kernel's prefix and IPv6 routes
 * and default rules added, protocols and sysctls as read), and a plan of a
 * line per element: for the in-process tests and measures of its codecs.
 */
import { create } from "@bufbuild/protobuf";
import {
  AddressSchema,
  NexthopSchema,
  RouteSchema,
  RuleSchema,
  type State,
  StateSchema,
  SysctlSchema,
} from "../../src/gen/network_pb";

export const LARGE_STATE_TABLES = [254, 100, 200, 300];
const TABLES = LARGE_STATE_TABLES;
const ROUTES = 10_000;

/** The state row 12 Applies first (not exact: the kernel's own routes and rules stay, and Get lists them). */
export function largeState(macs: readonly string[]): State {
  const nexthops = [
    ...Array.from({ length: 20 }, (_, i) => ({
      id: i + 1,
      family: 4,
      gateway: `10.${i % 2}.0.${10 + i}`,
      device: `eth${i % 2}`,
      onlink: true,
    })),
    ...Array.from({ length: 5 }, (_, g) => ({
      id: 100 + g,
      group: [0, 1, 2].map((k) => ({ id: 1 + ((g * 3 + k) % 20), weight: k + 1 })),
    })),
  ].map((n) => create(NexthopSchema, n));
  const routes = Array.from({ length: ROUTES }, (_, i) => {
    const table = TABLES[i % TABLES.length] as number;
    const dest = `172.${16 + ((i >> 16) & 15)}.${(i >> 8) & 255}.${i & 255}/32`;
    if (i % 100 === 1) {
      return create(RouteSchema, {
        table,
        family: 4,
        dest,
        hops: [
          { gateway: "10.0.0.1", device: "eth0", weight: 1, onlink: true },
          { gateway: "10.1.0.1", device: "eth1", weight: 2, onlink: true },
        ],
      });
    }
    if (i % 50 === 2)
      return create(RouteSchema, {
        table,
        family: 4,
        dest,
        nhid: i % 100 === 2 ? 100 + (i % 5) : 1 + (i % 20),
      });
    return create(RouteSchema, {
      table,
      family: 4,
      dest,
      gateway: `10.${i % 2}.0.1`,
      device: `eth${i % 2}`,
      onlink: true,
    });
  });
  const rules = Array.from({ length: 100 }, (_, i) =>
    create(RuleSchema, {
      priority: 1000 + i,
      family: 4,
      from: `192.168.${i}.0/24`,
      table: TABLES[1 + (i % 3)] as number,
    }),
  );
  return create(StateSchema, {
    interfaces: macs.map((mac, i) => ({
      mac,
      name: `eth${i}`,
      mtu: 1500,
      up: true,
      addresses: [{ address: `10.${i}.0.2`, prefix: 16 }],
    })),
    routes,
    rules,
    nexthops,
  });
}

/** largeState as Get reads it back after the first Apply (two fixed MACs). */
export function largeStateAsRead(): State {
  const state = largeState(["02:00:00:00:00:00", "02:00:00:00:00:01"]);
  for (const r of state.routes) {
    r.protocol = "boot";
    for (const h of r.hops) h.family = 4;
  }
  for (const [n, link] of state.interfaces.entries()) {
    const device = link.name;
    link.addresses.push(create(AddressSchema, { address: `fe80::${n + 1}`, prefix: 64 }));
    state.routes.push(
      ...[
        { family: 4, dest: `10.${n}.0.0/16`, source: `10.${n}.0.2`, scope: 253 },
        { family: 6, dest: "fe80::/64", metric: 256, attrs: [{ name: "pref", value: "medium" }] },
        { table: 255, family: 6, dest: "ff00::/8", metric: 256, type: 8 },
      ].map((r) => create(RouteSchema, { table: 254, device, protocol: "kernel", ...r })),
    );
  }
  state.rules = [
    create(RuleSchema, { priority: 0, family: 4, table: 255 }),
    ...state.rules,
    create(RuleSchema, { priority: 32766, family: 4, table: 254 }),
    create(RuleSchema, { priority: 32767, family: 4, table: 253 }),
  ];
  const keys = ["rp_filter", "accept_redirects", "forwarding", "arp_ignore", "proxy_arp"];
  const scopes = ["all", "default", "eth0", "eth1"];
  state.sysctls = Array.from({ length: 738 }, (_, i) =>
    create(SysctlSchema, {
      key: `net.ipv${4 + 2 * (i % 2)}.conf.${scopes[i % 4]}.${keys[i % 5]}_${i}`,
      value: String(i % 3),
    }),
  );
  return state;
}

/** A plan line per nexthop object, route and rule, as `ip -batch` takes them. */
export function largeStatePlan(state: State): string[] {
  return [
    ...state.nexthops.map((n) => `nexthop replace id ${n.id} via ${n.gateway} dev ${n.device}`),
    ...state.routes.map((r) => `route replace ${r.dest} via ${r.gateway} table ${r.table} onlink`),
    ...state.rules.map((r) => `rule add priority ${r.priority} from ${r.from} table ${r.table}`),
  ];
}
