/**
 * planRules, property-tested against a model of the kernel's rule list
 * (`add` refuses an identical rule, `del` needs one): the desired rules
 * and the default rules none takes the place of, adds before deletes,
 * idempotent.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FullState } from "../../src/net/model/full-state";
import type { Route } from "../../src/net/model/model";
import { planApply } from "../../src/net/plan/plan-apply";
import {
  DEFAULT_RULES,
  planRules,
  type Rule,
  type RuleOp,
  ruleIdentity,
} from "../../src/net/plan/rules";

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

describe("planApply: IPv4's local and main tables apart before the routes", () => {
  // The kernel keeps local and main as one table until the namespace's first
  // IPv4 rule, and checks an onlink gateway there: a `local` default in main
  // then makes it local (checked in a netns: test/host/sync-route-vocabulary).
  const route: Route = {
    family: 4,
    dst: "172.29.50.0/24",
    dev: "",
    scope: 0,
    metric: 0,
    onlink: false,
    mtu: 0,
    protocol: "boot",
    type: "unreachable",
  };
  const own: Rule = {
    family: 4,
    priority: 28511,
    not: false,
    dst: "10.18.0.0/16",
    action: "prohibit",
    table: 0,
  };
  const v6 = POOL.find((r) => r.family === 6 && r.priority === 100) as Rule;
  const state = (rules: Rule[]): FullState => ({
    links: [],
    routes: [],
    rules,
    neighbors: [],
    sysctls: new Map(),
  });
  const plan = (current: Rule[], rules: Rule[]) =>
    planApply(
      state(current),
      { links: [], routes: [route], rules, neighbors: [], sysctls: [], nexthops: [] },
      { exact: false },
    ).batch;
  const split = ["rule add priority 32765 nop", "rule del priority 32765 nop"];

  it("a desired IPv4 rule of its own, a guest with the default rules only: an inert rule added and deleted before the first route", () => {
    const batch = plan([...DEFAULT_RULES], [own]);
    expect(batch.slice(0, 2)).toEqual(split);
    expect(batch[2]).toMatch(/^route /);
    expect(batch.slice(3)).toEqual(["rule add priority 28511 to 10.18.0.0/16 prohibit"]);
  });

  it("none when the guest has an IPv4 rule of its own already, or the desired rules are the defaults and IPv6 ones", () => {
    for (const [current, rules] of [
      [[...DEFAULT_RULES, { ...own, priority: 5 }], [own]],
      [[...DEFAULT_RULES], [...DEFAULT_RULES, v6]],
    ] as [Rule[], Rule[]][]) {
      expect(plan(current, rules).filter((l) => l.includes("nop"))).toEqual([]);
    }
  });
});
