/**
 * The floor under plan-parallel.ts: row 12's plan (a dry run of its Apply
 * from the flushed guest) through one `ip -batch` and through the parts an
 * agent on two CPUs runs (lines before the first gateway route in one
 * process, the gateway routes split by table between two processes at
 * once, the rest after), interleaved, each from the flushed guest.
 *
 *   bun bench/profile/ip-batch-split.ts [--runs 8]
 */

import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { shareOut } from "../../src/net/iproute/ip-batch-parts";
import { addVeth, Guest, randomMac } from "../../test/host/helpers";
import { largeState } from "../../test/support/large-state";
import { option } from "../lib/args";
import { median } from "../lib/stats";
import { flushLargeState } from "../rows/large-state";
import { timeIp } from "../rows/update-routes";

const runs = Number(option("--runs", "8"));
const guest = await Guest.create();
try {
  const ns = guest.ns;
  const macs = [randomMac(), randomMac()];
  await addVeth(ns, "eth0", macs[0] as string);
  await addVeth(ns, "eth1", macs[1] as string);
  const c = await AgentClient.connect(guest.addr);
  await c.unary(Network.method.apply, { desired: largeState(macs) }, { timeoutMs: 120_000 });
  const desired = await c.unary(Network.method.get, {});
  await flushLargeState(ns.name);
  const dry = await c.unary(
    Network.method.apply,
    { desired, exact: true, dryRun: true },
    { timeoutMs: 120_000 },
  );
  c.close();
  const plan = dry.plan;
  const gatewayRoute = (l: string) => l.startsWith("route ") && / (via|nhid) /.test(l);
  const from = plan.findIndex(gatewayRoute);
  const to = plan.length - [...plan].reverse().findIndex(gatewayRoute);
  const tableOf = (l: string) => / table (\S+)/.exec(l)?.[1] ?? "main";
  const byTable = new Map<string, string[]>();
  for (const l of plan.slice(from, to))
    byTable.set(tableOf(l), [...(byTable.get(tableOf(l)) ?? []), l]);
  const shares = shareOut([...byTable.values()], from, 2);
  const batch = (lines: readonly string[]) =>
    lines.length ? timeIp(["-n", ns.name, "-batch", "-"], `${lines.join("\n")}\n`) : undefined;
  const one = async () => (await timeIp(["-n", ns.name, "-batch", "-"], `${plan.join("\n")}\n`)).ms;
  const parts = async () => {
    const t0 = performance.now();
    await batch(plan.slice(0, from));
    await Promise.all(shares.map((s) => batch(s.lines)));
    await batch(plan.slice(to));
    return performance.now() - t0;
  };
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < runs; i++) {
    for (const [f, out] of (i % 2
      ? [
          [parts, b],
          [one, a],
        ]
      : [
          [one, a],
          [parts, b],
        ]) as [() => Promise<number>, number[]][]) {
      await flushLargeState(ns.name);
      out.push(await f());
    }
  }
  const ms = (xs: number[]) => xs.map(Math.round).join(" ");
  console.log(`${plan.length} lines; ${to - from} gateway routes in ${byTable.size} tables`);
  console.log(`one ip -batch: median ${median(a).toFixed(0)} ms (${ms(a)})`);
  console.log(`in parts, two at once: median ${median(b).toFixed(0)} ms (${ms(b)})`);
  const ratios = a.map((x, i) => (b[i] as number) / x);
  console.log(`parts / one, per pair: median ${median(ratios).toFixed(2)}`);
} finally {
  await guest.remove();
}
