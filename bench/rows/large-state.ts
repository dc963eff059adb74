/**
 * Row 12: a large whole state in one netagent.v1 Apply: 10,000
 * routes over 4 tables (main, 100, 200, 300), among them 100 multipath
 * routes and 200 routes by nexthop objects (20 single objects, 5 groups),
 * and 100 rules, on a guest netns with two veth NICs. The desired state is
 * the guest's own Get answer after a first Apply (so it lists the kernel's
 * prefix routes and default rules, as a pod read does). Each run starts
 * from the guest with every table, rule and nexthop object flushed, and
 * Applies it (exact), timed from the request to the answer (read, plan,
 * ip -batch, read back, check; on two CPUs the plan's gateway routes run
 * table by table in two ip processes, plan-parallel.ts). The floor makes
 * the same changes: the plan's own batch lines (a dry run from the same
 * start, not timed) through one `ip -n GUEST -batch -`. Runs alternate
 * A B / B A.
 */

import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { addVeth, Guest, randomMac } from "../../test/host/helpers";
import { largeState, LARGE_STATE_TABLES as TABLES } from "../../test/support/large-state";
import { applyPairs } from "../lib/apply-pairs";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";
import { timeIp } from "./update-routes";

/** The guest netns `ns` back to row 12's start: its nexthop objects, the state's tables and rules flushed. */
export async function flushLargeState(ns: string): Promise<void> {
  const lines = [
    "nexthop flush",
    ...TABLES.map((t) => `route flush table ${t}`),
    ...Array.from({ length: 100 }, (_, i) => `rule del priority ${1000 + i}`),
  ];
  await timeIp(["-n", ns, "-force", "-batch", "-"], `${lines.join("\n")}\n`).catch(() => undefined);
}

export async function largeStateRows(pairs: number): Promise<Row[]> {
  let guest: Guest | undefined;
  let client: AgentClient | undefined;
  try {
    guest = await Guest.create();
    const ns = guest.ns;
    const macs = [randomMac(), randomMac()];
    await addVeth(ns, "eth0", macs[0] as string);
    await addVeth(ns, "eth1", macs[1] as string);
    client = await AgentClient.connect(guest.addr);
    const c = client;
    await c.unary(Network.method.apply, { desired: largeState(macs) }, { timeoutMs: 120_000 });
    const desired = await c.unary(Network.method.get, {});
    const request = { desired, exact: true };
    // Table local's kernel routes come and go with DAD on their own: not counted.
    const counts = async () => {
      const routes = await ns.json<{ table?: string; protocol?: string }[]>(
        "route",
        "show",
        "table",
        "all",
      );
      const nh = await ns.json<unknown[]>("nexthop", "show");
      const rules = await ns.json<unknown[]>("rule", "show");
      const own = routes.filter((r) => !(r.table === "local" && r.protocol === "kernel"));
      return { routes: own.length, nexthops: nh.length, rules: rules.length };
    };
    const want = await counts();
    const reset = () => flushLargeState(ns.name);
    const check = async (what: string) => {
      const got = await counts();
      if (JSON.stringify(got) !== JSON.stringify(want))
        throw new Error(`${what}: ${JSON.stringify(got)}, wanted ${JSON.stringify(want)}`);
    };
    const floorPlan = async () => {
      const dry = await c.unary(
        Network.method.apply,
        { ...request, dryRun: true },
        { timeoutMs: 120_000 },
      );
      if (dry.plan.some((l) => l.startsWith("-6 ") || l.startsWith("sysctl ")))
        throw new Error("the plan needs ip -6 or sysctl writes: not this state");
      return dry.plan;
    };
    const shape = `${desired.routes.length} routes, ${desired.rules.length} rules, ${desired.nexthops.length} nexthop objects`;
    const lines: number[] = [];
    const { a, b, ratios } = await applyPairs({
      pairs,
      reset,
      apply: () => c.unary(Network.method.apply, request, { timeoutMs: 120_000 }),
      floor: async () => {
        const plan = await floorPlan();
        lines.push(plan.length);
        return (await timeIp(["-n", ns.name, "-batch", "-"], `${plan.join("\n")}\n`)).ms;
      },
      check,
      floorWhat: "ip -batch",
    });
    return [
      {
        id: "12",
        what: `whole-state Apply of a large state (${shape}; ${median(lines)} batch lines), request -> answer`,
        unit: "ms",
        ours: median(a),
        reference: median(b),
        referenceWhat: "the same plan's lines through one ip -batch",
        ratio: median(ratios),
        ratioNote: "median of per-pair ratios",
        oursStats: summarize(a),
        referenceStats: summarize(b),
        ratioStats: summarize(ratios),
        goal: "ratio <= 1.5",
        met: median(ratios) <= 1.5,
        notes: [
          "ours: netagent.v1.Network/Apply (exact): validate, read, plan, ip -batch (gateway routes in 2 processes by table on 2+ CPUs), read back, re-plan, answer the state",
          "reference: the same plan's batch lines, no reads",
        ],
        commands: [`bun bench/run.ts --rows 12 --pairs ${pairs}`],
      },
    ];
  } finally {
    client?.close();
    await guest?.remove().catch(() => {});
  }
}
