/**
 * Policy rules and routes of every table: the parser of `ip -json rule`
 * (recorded from a real namespace), the renderer, and property tests of
 * planRules and planTables against kernel models (a rule list that refuses
 * duplicates and missing deletes; test/support/route-sim.ts per table).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Link, type Route, routeIdentity, routeKey } from "../../src/net/model/model";
import { parseAllTableRoutes } from "../../src/net/parse/parse-ip-json";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { planTables } from "../../src/net/plan/plan-tables";
import type { RouteOp } from "../../src/net/plan/routes/plan-routes";
import {
  DEFAULT_RULES,
  parseRules,
  planRules,
  type Rule,
  type RuleOp,
  renderRule,
  ruleIdentity,
} from "../../src/net/plan/rules";
import { RouteSim } from "../support/route-sim";

// Recorded: ip -d -j rule / ip -6 -d -j rule, iproute2 6.1, Linux 6.18 (tun9 absent: detached).
const V4 = [
  { priority: 0, src: "all", table: "local", protocol: "kernel" },
  {
    priority: 100,
    not: null,
    src: "10.1.0.0",
    srclen: 16,
    dst: "10.2.0.0",
    dstlen: 24,
    fwmark: "0x10",
    fwmask: "0xff",
    iif: "eth0",
    table: "200",
    protocol: "unspec",
  },
  { priority: 101, src: "all", oif: "eth0", action: "blackhole", protocol: "unspec" },
  { priority: 102, src: "all", fwmark: "0x7", action: "unreachable", protocol: "unspec" },
  { priority: 105, src: "all", table: "main", suppress_prefixlen: 0, protocol: "unspec" },
  {
    priority: 110,
    src: "10.0.0.0",
    srclen: 8,
    ipproto: "tcp",
    sport_start: 1000,
    sport_end: 2000,
    dport: 80,
    table: "100",
    protocol: "unspec",
  },
  {
    priority: 111,
    src: "all",
    tos: "0x10",
    uid_start: 1000,
    uid_end: 2000,
    table: "100",
    protocol: "unspec",
  },
  { priority: 112, src: "all", goto: 120, unresolved: null, protocol: "unspec" },
  { priority: 113, src: "all", nop: null, protocol: "unspec" },
  { priority: 114, src: "all", table: "main", suppress_ifgroup: "5", protocol: "unspec" },
  { priority: 115, src: "all", l3mdev: null, protocol: "unspec" },
  {
    priority: 116,
    src: "all",
    table: "100",
    flow_from: "3",
    flow_to: "4",
    protocol: "unspec",
  },
  {
    priority: 117,
    src: "all",
    iif: "tun9",
    iif_detached: null,
    table: "100",
    protocol: "static",
  },
  { priority: 32765, src: "10.248.246.146", table: "100", protocol: "unspec" },
  { priority: 32766, src: "all", table: "main", protocol: "kernel" },
  { priority: 32767, src: "all", table: "default", protocol: "kernel" },
];
const V6 = [
  { priority: 0, src: "all", table: "local", protocol: "kernel" },
  { priority: 104, src: "2001:db8::", srclen: 32, table: "300", protocol: "unspec" },
  {
    priority: 118,
    src: "all",
    oif: "tun9",
    oif_detached: null,
    ipproto: "ipv6-icmp",
    table: "100",
    protocol: "unspec",
  },
  { priority: 32766, src: "all", table: "main", protocol: "kernel" },
];

const byPriority = (rules: readonly Rule[], p: number) => rules.find((r) => r.priority === p);

describe("parseRules", () => {
  const v4 = parseRules(V4, 4);
  const v6 = parseRules(V6, 6);

  it("reads selectors, actions and tables", () => {
    expect(byPriority(v4, 100)).toEqual({
      family: 4,
      priority: 100,
      not: true,
      src: "10.1.0.0/16",
      dst: "10.2.0.0/24",
      iif: "eth0",
      fwmark: { mark: 0x10, mask: 0xff },
      action: "lookup",
      table: 200,
    });
    expect(byPriority(v4, 101)).toMatchObject({ oif: "eth0", action: "blackhole", table: 0 });
    expect(byPriority(v4, 102)).toMatchObject({
      fwmark: { mark: 7, mask: 0xffffffff },
      action: "unreachable",
    });
    expect(byPriority(v4, 32765)).toEqual({
      family: 4,
      priority: 32765,
      not: false,
      src: "10.248.246.146/32",
      action: "lookup",
      table: 100,
    });
    expect(byPriority(v6, 104)).toMatchObject({ family: 6, src: "2001:db8::/32", table: 300 });
    expect([...v4, ...v6]).toEqual(
      expect.arrayContaining(DEFAULT_RULES.map((d) => expect.objectContaining(d))),
    );
  });

  it("reads every other selector and action as canonical attributes (numbers, not names)", () => {
    const attrs = (r: Rule | undefined) => [r?.attrs, r?.other, r?.table];
    expect(attrs(byPriority(v4, 105))).toEqual([[["suppress_prefixlength", "0"]], undefined, 254]);
    expect(attrs(byPriority(v4, 110))).toEqual([
      [
        ["dport", "80"],
        ["ipproto", "6"],
        ["sport", "1000-2000"],
      ],
      undefined,
      100,
    ]);
    expect(attrs(byPriority(v4, 111))).toEqual([
      [
        ["tos", "0x10"],
        ["uidrange", "1000-2000"],
      ],
      undefined,
      100,
    ]);
    // goto, nop and l3mdev are the action: no table.
    expect(attrs(byPriority(v4, 112))).toEqual([[["goto", "120"]], undefined, 0]);
    expect(attrs(byPriority(v4, 113))).toEqual([[["nop", "on"]], undefined, 0]);
    expect(attrs(byPriority(v4, 114))).toEqual([[["suppress_ifgroup", "5"]], undefined, 254]);
    expect(attrs(byPriority(v4, 115))).toEqual([[["l3mdev", "on"]], undefined, 0]);
    expect(attrs(byPriority(v4, 116))).toEqual([[["realms", "3/4"]], undefined, 100]);
    // A device that is not there: the rule is the same rule, detached.
    expect(byPriority(v4, 117)).toMatchObject({ iif: "tun9", attrs: [["protocol", "static"]] });
    expect(byPriority(v4, 117)?.other).toBeUndefined();
    expect(byPriority(v6, 118)).toMatchObject({ oif: "tun9", attrs: [["ipproto", "58"]] });
  });

  it("keeps what it cannot carry as `other`: an unknown key, a name it cannot turn into a number", () => {
    const [r] = parseRules(
      [{ priority: 7, src: "all", ipproto: "foo-proto", flow_to: "cosmos", table: "100", x: 1 }],
      4,
    );
    expect(r?.other).toEqual(["x=1", 'ipproto="foo-proto"', 'flow_to="cosmos"']);
    expect(r?.attrs).toBeUndefined();
  });

  it("skips entries without a priority, and non-arrays", () => {
    expect(parseRules([{ src: "all" }, null, 3], 4)).toEqual([]);
    expect(parseRules({}, 4)).toEqual([]);
  });
});

describe("renderRule", () => {
  it("renders every selector; every IPv6 rule is marked for ip -6", () => {
    const [r] = parseRules([V4[1]], 4);
    expect(renderRule("add", r as Rule)).toBe(
      "rule add priority 100 not from 10.1.0.0/16 to 10.2.0.0/24 iif eth0 fwmark 0x10/0xff lookup 200",
    );
    expect(renderRule("del", DEFAULT_RULES[4] as Rule)).toBe(
      "-6 rule del priority 32766 protocol kernel lookup main",
    );
    const line = (p: number) => renderRule("add", byPriority(parseRules(V4, 4), p) as Rule);
    expect(line(110)).toBe(
      "rule add priority 110 from 10.0.0.0/8 dport 80 ipproto 6 sport 1000-2000 lookup 100",
    );
    expect(line(111)).toBe("rule add priority 111 tos 0x10 uidrange 1000-2000 lookup 100");
    expect(line(112)).toBe("rule add priority 112 goto 120");
    expect(line(113)).toBe("rule add priority 113 nop");
    expect(line(115)).toBe("rule add priority 115 l3mdev");
    expect(line(116)).toBe("rule add priority 116 realms 3/4 lookup 100");
    expect(line(117)).toBe("rule add priority 117 iif tun9 protocol static lookup 100");
    // iproute2 sends a rule without -6 as IPv4, whatever its prefix.
    const [v6] = parseRules(
      [{ priority: 9613, src: "fd90:6b33:220a:4300::", srclen: 56, action: "blackhole" }],
      6,
    );
    expect(renderRule("add", v6 as Rule)).toBe(
      "-6 rule add priority 9613 from fd90:6b33:220a:4300::/56 blackhole",
    );
  });

  it("refuses a value that would be more than one token", () => {
    const bad: Rule = {
      family: 4,
      priority: 5,
      not: false,
      iif: "eth0 lookup 1\nrule flush",
      action: "lookup",
      table: 100,
    };
    expect(() => renderRule("add", bad)).toThrow(/refusing/);
  });
});

/** The kernel's rule list: `add` refuses an identical rule, `del` needs one. */
class RuleModel {
  constructor(public rules: Rule[]) {}
  apply(op: RuleOp): void {
    const id = ruleIdentity(op.rule);
    const at = this.rules.findIndex((r) => ruleIdentity(r) === id);
    if (op.op === "add") {
      if (at >= 0) throw new Error(`add ${id}: File exists`);
      this.rules.push(op.rule);
    } else {
      if (at < 0) throw new Error(`del ${id}: No such file or directory`);
      this.rules.splice(at, 1);
    }
  }
}

const POOL: Rule[] = [
  ...DEFAULT_RULES,
  { family: 4, priority: 100, not: false, src: "10.0.0.2/32", action: "lookup", table: 100 },
  { family: 4, priority: 100, not: false, src: "10.0.0.3/32", action: "lookup", table: 100 },
  {
    family: 4,
    priority: 101,
    not: true,
    fwmark: { mark: 1, mask: 0xff },
    action: "lookup",
    table: 200,
  },
  { family: 4, priority: 32766, not: false, action: "lookup", table: 100 },
  { family: 6, priority: 100, not: false, dst: "2001:db8::/32", action: "prohibit", table: 0 },
  { family: 6, priority: 200, not: false, oif: "eth1", action: "lookup", table: 300 },
  // The same selectors as a rule above but for their attributes: other rules.
  {
    family: 4,
    priority: 100,
    not: false,
    src: "10.0.0.2/32",
    action: "lookup",
    table: 100,
    attrs: [
      ["dport", "53"],
      ["ipproto", "17"],
    ],
  },
  { family: 4, priority: 102, not: false, action: "lookup", table: 0, attrs: [["goto", "200"]] },
  { family: 4, priority: 102, not: false, action: "lookup", table: 0, attrs: [["nop", "on"]] },
  {
    family: 4,
    priority: 32766,
    not: false,
    action: "lookup",
    table: 254,
    attrs: [["protocol", "static"]],
  },
];
const ids = (rules: readonly Rule[]) => rules.map(ruleIdentity).sort();
const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS) || 300 };

describe("planRules properties (rule-list model)", () => {
  it("yields the desired rules plus the default rules none takes the place of; adds before deletes; idempotent", () => {
    fc.assert(
      fc.property(
        fc.subarray(POOL),
        fc.subarray(POOL.slice(5)),
        fc.boolean(),
        (cur, want, exact) => {
          const ops = planRules(cur, want, { exact });
          const model = new RuleModel([...cur]);
          for (const op of ops) model.apply(op);
          const taken = new Set(want.map((r) => `${r.family} ${r.priority}`));
          const expected = exact
            ? want
            : [...want, ...DEFAULT_RULES.filter((d) => !taken.has(`${d.family} ${d.priority}`))];
          expect(ids(model.rules)).toEqual(ids(expected));
          const firstDel = ops.findIndex((o) => o.op === "del");
          if (firstDel >= 0) expect(ops.slice(firstDel).every((o) => o.op === "del")).toBe(true);
          expect(planRules(model.rules, want, { exact })).toEqual([]);
          // The rollback: exact back to where it started.
          const back = new RuleModel([...model.rules]);
          for (const op of planRules(model.rules, cur, { exact: true })) back.apply(op);
          expect(ids(back.rules)).toEqual(ids(cur));
        },
      ),
      RUNS,
    );
  });
});

const LINKS: Link[] = ["eth0", "eth1"].map((name, i) => ({
  index: i + 2,
  name,
  mac: `02:00:00:00:00:0${i}`,
  mtu: 1500,
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  kind: "veth",
  addresses: [{ family: 4, address: `10.0.${i}.2`, prefix: 24, scope: "global" }],
}));
const KERNEL = impliedKernelRoutes(LINKS).map((r) => ({ ...r, table: 254 }));

function route(table: number, dst: string, dev: string, gw?: string): Route {
  return {
    family: 4,
    table,
    dst,
    ...(gw ? { gateway: gw } : {}),
    dev,
    scope: gw ? 0 : 253,
    metric: 0,
    // onlink: the model (like the kernel) then needs no route to the gateway in this table.
    onlink: gw !== undefined,
    mtu: 0,
    protocol: "boot",
    type: "unicast",
  };
}

const ROUTES: Route[] = [254, 100, 200].flatMap((t) => [
  route(t, "0.0.0.0/0", "eth0", "10.0.0.1"),
  route(t, "0.0.0.0/0", "eth1", "10.0.1.1"),
  route(t, "10.0.0.0/24", "eth0", "10.0.0.1"),
  route(t, "10.0.0.1/32", "eth0"),
  route(t, "10.9.0.0/16", "eth1", "10.0.1.1"),
  { ...route(t, "10.8.0.0/16", ""), type: "blackhole", scope: 0 },
]);

/** One model table per table id. */
function simulateTables(current: readonly Route[], ops: readonly RouteOp[]): Route[] {
  const sims = new Map<number, RouteSim>();
  const sim = (t: number) => {
    let s = sims.get(t);
    if (!s) {
      s = new RouteSim(current.filter((r) => (r.table ?? 254) === t));
      sims.set(t, s);
    }
    return s;
  };
  for (const r of current) sim(r.table ?? 254);
  for (const op of ops) sim(op.route.table ?? 254).apply(op);
  return [...sims.entries()].flatMap(([t, s]) => s.routes.map((r) => ({ ...r, table: t })));
}

const tableIds = (routes: readonly Route[]) =>
  [...new Set(routes.map((r) => `${r.table ?? 254} ${routeIdentity(r, false)}`))].sort();

/** Routes may hold one per (table, key, dev): what a validated request holds. */
function unique(routes: readonly Route[]): Route[] {
  const seen = new Set<string>();
  return routes.filter((r) => {
    const k = `${r.table} ${r.dst} ${r.dev}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

const tableKey = (r: Route) => `${r.table ?? 254} ${routeKey(r)}`;

/**
 * Whether the delete at `i` is one of a key's routes deleted just before
 * that key's routes are added again (a rebuild: routes `ip route append`
 * made, put back in their order; plan-routes.ts): the run of deletes of
 * its key is followed by an addition of that key.
 */
function rebuilding(ops: readonly RouteOp[], i: number): boolean {
  const key = tableKey((ops[i] as RouteOp).route);
  let j = i;
  while (ops[j]?.op === "delete" && tableKey((ops[j] as RouteOp).route) === key) j++;
  const next = ops[j];
  return next !== undefined && next.op !== "delete" && tableKey(next.route) === key;
}

describe("planTables properties (a kernel model per table)", () => {
  it("every table ends as asked (main keeps the kernel routes none supersedes unless exact); deletes last; idempotent; exact restores", () => {
    fc.assert(
      fc.property(
        fc.subarray(KERNEL),
        fc.subarray(ROUTES),
        fc.subarray(ROUTES),
        fc.boolean(),
        (kernelLeft, cur0, want0, exact) => {
          const current = unique([...kernelLeft, ...cur0]);
          const desired = unique(want0);
          const ops = planTables(current, desired, { exact, kernel: KERNEL });
          const after = simulateTables(current, ops);
          const superseded = (k: Route) =>
            desired.some((d) => (d.table ?? 254) === 254 && d.dst === k.dst && d.dev === k.dev);
          const expected = exact ? desired : [...desired, ...KERNEL.filter((k) => !superseded(k))];
          expect(tableIds(after)).toEqual(tableIds(expected));
          const firstDel = ops.findIndex((o, i) => o.op === "delete" && !rebuilding(ops, i));
          if (firstDel >= 0) expect(ops.slice(firstDel).every((o) => o.op === "delete")).toBe(true);
          expect(planTables(after, desired, { exact, kernel: KERNEL })).toEqual([]);
          const back = simulateTables(after, planTables(after, current, { exact: true }));
          expect(tableIds(back)).toEqual(tableIds(current));
        },
      ),
      RUNS,
    );
  });
});

describe("parseAllTableRoutes", () => {
  it("keeps every table with its id; IPv6 unreachable routes (filed under lo) have no device", () => {
    const doc = [
      { type: "throw", dst: "10.8.0.0/16", table: "300", flags: [] },
      { dst: "default", gateway: "10.248.246.145", dev: "eth0", table: "100", flags: [] },
      {
        type: "local",
        dst: "10.248.246.146",
        dev: "eth0",
        table: "local",
        protocol: "kernel",
        scope: "host",
        prefsrc: "10.248.246.146",
        flags: [],
      },
      {
        type: "unreachable",
        dst: "default",
        dev: "lo",
        table: "300",
        metric: 1024,
        flags: [],
        pref: "medium",
      },
      { dst: "fe80::/64", dev: "eth0", protocol: "kernel", metric: 256, flags: [], pref: "medium" },
    ];
    const r = parseAllTableRoutes(doc);
    expect(r.map((x) => [x.table, x.type, x.dst, x.dev, x.family])).toEqual([
      [300, "throw", "10.8.0.0/16", "", 4],
      [100, "unicast", "0.0.0.0/0", "eth0", 4],
      [255, "local", "10.248.246.146/32", "eth0", 4],
      [300, "unreachable", "::/0", "", 6],
      [254, "unicast", "fe80::/64", "eth0", 6],
    ]);
  });
});
