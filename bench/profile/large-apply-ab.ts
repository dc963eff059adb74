/**
 * Row 12's Apply (the large whole state: 10,000 routes over 4 tables, 100
 * rules, multipath and nexthop objects; bench/rows/large-state.ts) into two
 * agents side by side, each in its own guest netns with its own two NICs,
 * started from different builds: A and B interleaved (A B / B A), each guest
 * flushed back to the same start before every run, and its route, rule and
 * nexthop counts checked after its first Apply. Besides the wall time (the
 * client's request to its decoded answer), each agent's CPU per Apply
 * (bench/lib/cpu-time.ts), steadier under load. Row 12 itself compares
 * with ip -batch; this compares two agents at the resolution row 12's
 * noise (its floor varies by a fifth from pair to pair) does not give.
 *
 *   bun bench/profile/large-apply-ab.ts [--pairs 15] [--a-bin PATH] [--b-bin PATH] [--b-policy]
 *
 * --b-policy: B is restarted, after its first Apply, under the policy
 * `netagentctl policy` writes for the state it is sent (the cost of the checks).
 */

import { writeFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { validateApply } from "../../src/agent/validate/validate-state";
import { AgentClient } from "../../src/client/client";
import { ApplyRequestSchema, Network } from "../../src/gen/network_pb";
import { policyForState } from "../../src/host/policy/policy-from-pod";
import { startAgent } from "../../test/helpers/agent";
import { Netns, randomMac } from "../../test/helpers/netns";
import { tempDir } from "../../test/helpers/tmp";
import { addVeth } from "../../test/host/helpers";
import { largeState } from "../../test/support/large-state";
import { option } from "../lib/args";
import { mainThreadCpuNs, threadsCpuNs } from "../lib/cpu-time";
import { interleave } from "../lib/interleave";
import { median } from "../lib/stats";
import { flushLargeState } from "../rows/large-state";

const pairs = Number(option("--pairs", "15"));
const bins = { a: option("--a-bin", ""), b: option("--b-bin", "") };
const bPolicy = process.argv.includes("--b-policy");

const cleanup: (() => Promise<unknown>)[] = [];
try {
  const guest = async (bin: string, withPolicy = false) => {
    const ns = await Netns.create("nh12ab");
    cleanup.push(() => ns.remove());
    const macs = [randomMac(), randomMac()];
    await addVeth(ns, "eth0", macs[0] as string);
    await addVeth(ns, "eth1", macs[1] as string);
    let agent = await startAgent({ netns: ns, ...(bin ? { binary: bin } : {}) });
    let client = await AgentClient.connect(`unix://${agent.socket}`);
    await client.unary(Network.method.apply, { desired: largeState(macs) }, { timeoutMs: 120_000 });
    // As row 12: the guest's own Get after a first Apply is the desired state.
    const desired = await client.unary(Network.method.get, {});
    if (withPolicy) {
      const dir = tempDir("netagent-bench-policy-");
      cleanup.push(async () => dir.remove());
      const policy = policyForState(
        validateApply(create(ApplyRequestSchema, { desired, exact: true })),
      );
      writeFileSync(dir.join("policy.json"), JSON.stringify(policy));
      client.close();
      await agent.stop();
      const args = ["--policy", dir.join("policy.json")];
      agent = await startAgent({ netns: ns, args, ...(bin ? { binary: bin } : {}) });
      client = await AgentClient.connect(`unix://${agent.socket}`);
    }
    const running = agent;
    const connected = client;
    cleanup.push(() => running.stop());
    cleanup.push(async () => connected.close());
    return {
      ns,
      client,
      request: { desired, exact: true },
      pid: agent.child.pid,
      times: [] as number[],
      cpu: [] as number[],
      main: [] as number[],
    };
  };
  const a = await guest(bins.a);
  const b = await guest(bins.b, bPolicy);
  const counts = async (ns: Netns) => {
    const routes = await ns.json<{ table?: string; protocol?: string }[]>(
      "route",
      "show",
      "table",
      "all",
    );
    const own = routes.filter((r) => !(r.table === "local" && r.protocol === "kernel"));
    const nh = await ns.json<unknown[]>("nexthop", "show");
    const rules = await ns.json<unknown[]>("rule", "show");
    return JSON.stringify({ routes: own.length, nexthops: nh.length, rules: rules.length });
  };
  const want = { a: await counts(a.ns), b: await counts(b.ns) };
  const reset = (ns: Netns) => flushLargeState(ns.name);
  const run = (g: typeof a, what: "a" | "b") => async (first: boolean) => {
    await reset(g.ns);
    const c0 = threadsCpuNs(g.pid);
    const m0 = mainThreadCpuNs(g.pid);
    const t0 = performance.now();
    await g.client.unary(Network.method.apply, g.request, { timeoutMs: 120_000 });
    g.times.push(performance.now() - t0);
    g.cpu.push((threadsCpuNs(g.pid) - c0) / 1e6);
    g.main.push((mainThreadCpuNs(g.pid) - m0) / 1e6);
    if (first) {
      const got = await counts(g.ns);
      if (got !== want[what]) throw new Error(`${what}: ${got}, wanted ${want[what]}`);
    }
  };
  await interleave(pairs, run(a, "a"), run(b, "b"));
  const ratios = b.times.map((x, i) => x / (a.times[i] as number));
  const cpuRatios = b.cpu.map((x, i) => x / (a.cpu[i] as number));
  const mainRatios = b.main.map((x, i) => x / (a.main[i] as number));
  console.log(`A ${bins.a || "dist/netagent"}: median ${median(a.times).toFixed(1)} ms`);
  console.log(`B ${bins.b || "dist/netagent"}: median ${median(b.times).toFixed(1)} ms`);
  console.log(`B/A median of per-pair ratios: ${median(ratios).toFixed(3)} (${pairs} pairs)`);
  console.log(
    `agent CPU per Apply (its threads, schedstat): A ${median(a.cpu).toFixed(1)} ms, B ${median(b.cpu).toFixed(1)} ms, B/A median of per-pair ratios ${median(cpuRatios).toFixed(3)}`,
  );
  console.log(
    `agent main thread CPU per Apply: A ${median(a.main).toFixed(1)} ms, B ${median(b.main).toFixed(1)} ms, B/A median of per-pair ratios ${median(mainRatios).toFixed(3)}`,
  );
} finally {
  for (const f of cleanup.reverse()) await f();
}
