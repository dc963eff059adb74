/**
 * The five kinds of network change, each as a scenario for the kill tests
 * (crash-run.ts): the old state built in a fresh namespace by `ip` alone,
 * the change sent to the agent, and the whole network read back
 * independently (`ip -json`, `iptables-save`, a sysctl read by `cat`),
 * normalised only where the kernel moves things by itself (timers, DAD,
 * the IPv6 link-local addresses and routes it makes on every up).
 */
import { create } from "@bufbuild/protobuf";
import type { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import {
  AddressSchema,
  Network,
  RouteSchema,
  RuleSchema,
  type State,
  StateSchema,
  SysctlSchema,
} from "../../src/gen/network_pb";
import { IPFamily } from "../../src/gen/types_pb";
import type { Netns } from "../helpers/netns";
import { run } from "../helpers/process";

export type KindName = "routes" | "link" | "neighbours" | "iptables" | "state";

export interface CrashKind {
  name: KindName;
  /** What the change is, for the table. */
  what: string;
  /** Builds the old state (links and whatever the change starts from). */
  setup(ns: Netns): Promise<void>;
  /** Sends the change; `prepared` is what prepare() answered once. */
  change(client: AgentClient, prepared: unknown): Promise<unknown>;
  /** Computed once from an agent on the old state (Apply's desired state). */
  prepare?(client: AgentClient): Promise<unknown>;
}

const MAC0 = "02:00:00:00:0c:01";
const MAC1 = "02:00:00:00:0c:02";
const MAC2 = "02:00:00:00:0c:03";
const TIMEOUT = { timeoutMs: 120_000 };

/** Three veth pairs (fixed MACs on both ends: every set-up reads the same) with addresses, as batch lines. */
function vethLines(): string[] {
  const lines: string[] = [];
  for (const [i, mac] of [MAC0, MAC1, MAC2].entries()) {
    lines.push(
      `link add eth${i} address ${mac} type veth peer name peer${i} address 02:00:00:00:0d:0${i}`,
      `link set peer${i} up`,
      `link set eth${i} up`,
    );
  }
  return [
    ...lines,
    "addr add 10.0.0.2/16 dev eth0",
    "addr add fd00::2/64 dev eth0 nodad",
    "addr add 10.1.0.2/24 dev eth1",
    "addr add fd01::2/64 dev eth1 nodad",
    "addr add 10.2.0.2/24 dev eth2",
  ];
}

const veths = (ns: Netns) => batch(ns, vethLines());

/** Lines through one `ip -n NS -batch -`. */
async function batch(ns: Netns, lines: string[]): Promise<void> {
  const file = `/tmp/crash-batch-${process.pid}-${ns.name}`;
  await Bun.write(file, `${lines.join("\n")}\n`);
  const r = await run("ip", ["-n", ns.name, "-batch", file]);
  await run("rm", ["-f", file]);
  if (r.code !== 0) throw new Error(`ip -batch in ${ns.name}: ${r.stderr}`);
}

const subnet = (i: number) => `10.${100 + (i >> 8)}.${i & 255}.0/24`;

const ROUTES: CrashKind = {
  name: "routes",
  what: "UpdateRoutes 3,000 → 3,000 routes (half replaced)",
  async setup(ns) {
    await batch(ns, [
      ...vethLines(),
      ...Array.from({ length: 3000 }, (_, i) => `route add ${subnet(i)} via 10.0.0.1 dev eth0`),
    ]);
  },
  change(client) {
    const routes = Array.from({ length: 3000 }, (_, i) => ({
      dest: subnet(i < 1500 ? i : i + 1500),
      gateway: "10.0.0.1",
      device: "eth0",
    }));
    return client.unary(AgentService.method.updateRoutes, { routes: { Routes: routes } }, TIMEOUT);
  },
};

const LINK: CrashKind = {
  name: "link",
  what: "UpdateInterface: rename taking a held name (swap), MTU, NOARP, the address set",
  setup: veths,
  change(client) {
    const v4 = (address: string) => ({ family: IPFamily.v4, address, mask: "24" });
    const v6 = (address: string) => ({ family: IPFamily.v6, address, mask: "64" });
    const iface = {
      hwAddr: MAC1,
      name: "eth2",
      mtu: 1400n,
      rawFlags: 0x80,
      IPAddresses: [v4("10.1.9.2"), v4("10.1.10.2"), v4("10.1.11.2"), v6("fd01::9"), v6("fd09::9")],
    };
    return client.unary(AgentService.method.updateInterface, { interface: iface }, TIMEOUT);
  },
};

const mac = (i: number, last: number) =>
  `02:aa:00:${(i >> 8).toString(16).padStart(2, "0")}:${(i & 255).toString(16).padStart(2, "0")}:${last.toString(16).padStart(2, "0")}`;
const neighbourIp = (i: number) => `10.0.${1 + (i >> 8)}.${i & 255}`;

const NEIGHBOURS: CrashKind = {
  name: "neighbours",
  what: "AddARPNeighbors 1,000 permanent (500 replaced, 500 new)",
  async setup(ns) {
    await batch(ns, [
      ...vethLines(),
      ...Array.from(
        { length: 500 },
        (_, i) => `neigh add ${neighbourIp(i)} lladdr ${mac(i, 1)} dev eth0 nud permanent`,
      ),
    ]);
  },
  change(client) {
    const ARPNeighbors = Array.from({ length: 1000 }, (_, i) => ({
      toIPAddress: { family: IPFamily.v4, address: neighbourIp(i), mask: "" },
      device: "eth0",
      lladdr: mac(i, 2),
      state: 0,
    }));
    return client.unary(
      AgentService.method.addARPNeighbors,
      { neighbors: { ARPNeighbors } },
      TIMEOUT,
    );
  },
};

/** filter, nat and mangle, the first two with many rules: a restore of several commits. */
function iptablesInput(): string {
  const out: string[] = ["*mangle", ":PREROUTING ACCEPT [0:0]", ":POSTROUTING ACCEPT [0:0]"];
  for (let i = 0; i < 300; i++)
    out.push(`-A PREROUTING -s 10.3.${i >> 8}.${i & 255}/32 -j MARK --set-mark ${i + 1}`);
  out.push(
    "COMMIT",
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":POSTROUTING ACCEPT [0:0]",
  );
  for (let i = 0; i < 600; i++)
    out.push(`-A PREROUTING -p tcp --dport ${10000 + i} -j REDIRECT --to-ports 15001`);
  out.push(
    "COMMIT",
    "*filter",
    ":INPUT ACCEPT [0:0]",
    ":FORWARD ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":MESH - [0:0]",
  );
  for (let i = 0; i < 600; i++) out.push(`-A MESH -s 10.4.${i >> 8}.${i & 255}/32 -j ACCEPT`);
  out.push("-A INPUT -j MESH", "COMMIT", "");
  return out.join("\n");
}

const IPTABLES: CrashKind = {
  name: "iptables",
  what: "SetIPTables: mangle, nat and filter, 1,500 rules, over an old filter table",
  async setup(ns) {
    await veths(ns);
    const old = [
      "*filter",
      ":INPUT ACCEPT [0:0]",
      ":OLD - [0:0]",
      "-A INPUT -j OLD",
      "-A OLD -s 10.9.0.1/32 -j DROP",
      "COMMIT",
      "",
    ];
    const file = `/tmp/crash-ipt-${process.pid}-${ns.name}`;
    await Bun.write(file, old.join("\n"));
    const r = await run("ip", ["netns", "exec", ns.name, "sh", "-c", `iptables-restore < ${file}`]);
    await run("rm", ["-f", file]);
    if (r.code !== 0) throw new Error(`iptables-restore: ${r.stderr}`);
  },
  change(client) {
    const data = new TextEncoder().encode(iptablesInput());
    return client.unary(AgentService.method.setIPTables, { isIpv6: false, data }, TIMEOUT);
  },
};

const STATE: CrashKind = {
  name: "state",
  what: "Apply: routes in main and table 100, two rules (v4 and v6), MTU and an address, a sysctl",
  async setup(ns) {
    await batch(ns, [
      ...vethLines(),
      ...Array.from({ length: 1000 }, (_, i) => `route add ${subnet(i)} via 10.0.0.1 dev eth0`),
      ...Array.from(
        { length: 500 },
        (_, i) => `route add ${subnet(i)} via 10.0.0.1 dev eth0 table 100`,
      ),
      "rule add from 10.0.0.0/16 lookup 100 priority 1000",
    ]);
    await ns.ip("-6", "rule", "add", "lookup", "100", "priority", "1001");
    await sysctlWrite(ns, "net.ipv4.conf.eth0.rp_filter", "0");
  },
  /**
   * The old state as Get reads it, changed: main's routes half replaced,
   * table 100's moved to 200, both rules moved to 200 (the IPv6 one without
   * a prefix: its own `ip -6 -batch`), eth0's MTU and one more address,
   * rp_filter.
   */
  async prepare(client) {
    const s: State = create(StateSchema, await client.unary(Network.method.get, {}));
    s.routes = s.routes.filter((r) => r.gateway !== "10.0.0.1");
    const via = (dest: string, table: number) =>
      create(RouteSchema, { table, family: 4, dest, gateway: "10.0.0.1", device: "eth0" });
    for (let i = 500; i < 1500; i++) s.routes.push(via(subnet(i), 254));
    for (let i = 0; i < 500; i++) s.routes.push(via(subnet(i), 200));
    s.rules = s.rules.filter((r) => r.priority !== 1000 && r.priority !== 1001);
    s.rules.push(
      create(RuleSchema, { priority: 2000, family: 4, from: "10.0.0.0/16", table: 200 }),
    );
    s.rules.push(create(RuleSchema, { priority: 2001, family: 6, table: 200 }));
    const eth0 = s.interfaces.find((i) => i.mac === MAC0);
    if (!eth0) throw new Error("Get has no eth0");
    eth0.mtu = 1400;
    eth0.addresses.push(create(AddressSchema, { address: "192.0.2.77", prefix: 24 }));
    s.sysctls = [create(SysctlSchema, { key: "net.ipv4.conf.eth0.rp_filter", value: "1" })];
    return s;
  },
  change(client, prepared) {
    return client.unary(
      Network.method.apply,
      { desired: prepared as State, exact: false },
      TIMEOUT,
    );
  },
};

async function sysctlWrite(ns: Netns, key: string, value: string): Promise<void> {
  const r = await run("ip", ["netns", "exec", ns.name, "sysctl", "-qw", `${key}=${value}`]);
  if (r.code !== 0) throw new Error(`sysctl ${key}: ${r.stderr}`);
}

export const KINDS: readonly CrashKind[] = [ROUTES, LINK, NEIGHBOURS, IPTABLES, STATE];
