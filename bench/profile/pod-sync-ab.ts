/**
 * A pod's sync (Check, UpdateInterface, UpdateRoutes, AddARPNeighbors of a
 * real CNI ptp pod) into two agents side by side, each in its own guest
 * netns, started with different flags: A and B interleaved (A B / B A),
 * the guest put back between runs as bench row 8 does (addresses, routes
 * and neighbours flushed, the name put back by the agent itself).
 *
 *   bun bench/profile/pod-sync-ab.ts [--pairs 21] [--a "--ip-session off"] [--b ""]
 *                                    [--a-bin PATH] [--b-bin PATH]
 *                                    [--a-env "K=V K2=V2"] [--b-env "..."] [--b-policy]
 *
 * (--b-policy: B runs under the pod's own generated policy, `netagentctl
 * policy`'s, given with --policy: the cost of the checks.)
 * (--a-bin/--b-bin: another build than dist/netagent for that side, e.g. a
 * copy of the previous commit's.) Besides the wall time, each side's agent
 * CPU per sync (bench/lib/cpu-time.ts), steadier under load.
 */

import { writeFileSync } from "node:fs";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { policyForKata } from "../../src/host/policy/policy-from-pod";
import { syncAgent } from "../../src/host/sync/drive-agent";
import { startAgent } from "../../test/helpers/agent";
import { Netns } from "../../test/helpers/netns";
import { tempDir } from "../../test/helpers/tmp";
import { addVeth } from "../../test/host/helpers";
import { threadsCpuNs } from "../lib/cpu-time";
import { interleave } from "../lib/interleave";
import { ptpSync } from "../lib/ptp-pod";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const pairs = Number(opt("--pairs", "21"));
const flags = (s: string) => s.split(" ").filter((x) => x !== "");
const sides = { a: flags(opt("--a", "--ip-session off")), b: flags(opt("--b", "")) };
const bins = { a: opt("--a-bin", ""), b: opt("--b-bin", "") };
const envOf = (s: string) =>
  Object.fromEntries(
    flags(s).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
const envs = { a: envOf(opt("--a-env", "")), b: envOf(opt("--b-env", "")) };

const { pod, req, iface } = await ptpSync();
const cleanup: (() => Promise<void> | void)[] = [() => pod.remove()];
try {
  if (argv.includes("--b-policy")) {
    const dir = tempDir("netagent-bench-policy-");
    cleanup.push(() => dir.remove());
    const policy = policyForKata(req);
    // The runs put the guest's name back (gst0) between syncs.
    const names = policy.interfaces.names;
    policy.interfaces.names = names === "any" ? names : [...names, "gst0"];
    writeFileSync(dir.join("policy.json"), JSON.stringify(policy));
    sides.b.push("--policy", dir.join("policy.json"));
  }
  const guest = async (args: string[], binary: string, env: Record<string, string>) => {
    const ns = await Netns.create("nh5ab");
    cleanup.push(() => ns.remove());
    await addVeth(ns, "gst0", iface.hwAddr);
    const agent = await startAgent({ args, netns: ns, env, ...(binary ? { binary } : {}) });
    cleanup.push(() => agent.stop());
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    cleanup.push(() => client.close());
    const times: number[] = [];
    /** The agent's own CPU per sync (all its threads, not its ip children), in ms. */
    const cpu: number[] = [];
    const pid = agent.child.pid;
    const run = async () => {
      await ns.ip("neigh", "flush", "dev", iface.name, "nud", "permanent").catch(() => "");
      await ns.ip("route", "flush", "dev", iface.name).catch(() => "");
      await ns.ip("addr", "flush", "dev", iface.name).catch(() => "");
      const back = { hwAddr: iface.hwAddr, mtu: iface.mtu, name: "gst0" };
      await client.unary(AgentService.method.updateInterface, { interface: back });
      const c0 = threadsCpuNs(pid);
      const t0 = performance.now();
      await syncAgent(client, req, { timeoutMs: 30_000 });
      times.push(performance.now() - t0);
      cpu.push((threadsCpuNs(pid) - c0) / 1e6);
    };
    return { run, times, cpu };
  };
  const a = await guest(sides.a, bins.a, envs.a);
  const b = await guest(sides.b, bins.b, envs.b);
  await a.run();
  await b.run();
  for (const g of [a, b]) {
    g.times.length = 0;
    g.cpu.length = 0;
  }
  await interleave(pairs, a.run, b.run);
  const ratios = b.times.map((x, i) => x / (a.times[i] as number));
  const cpuRatios = b.cpu.map((x, i) => x / (a.cpu[i] as number));
  const name = (flagsOf: string[], bin: string, env: string) =>
    `${env ? `${env} ` : ""}${bin || "dist/netagent"} ${flagsOf.join(" ") || "(defaults)"}`;
  console.log(
    `A ${name(sides.a, bins.a, opt("--a-env", ""))}: median ${median(a.times).toFixed(2)} ms`,
  );
  console.log(
    `B ${name(sides.b, bins.b, opt("--b-env", ""))}: median ${median(b.times).toFixed(2)} ms`,
  );
  console.log(`B/A median of per-pair ratios: ${median(ratios).toFixed(2)} (${pairs} pairs)`);
  console.log(
    `agent CPU per sync (its threads, schedstat): A ${median(a.cpu).toFixed(2)} ms, B ${median(b.cpu).toFixed(2)} ms, B/A median of per-pair ratios ${median(cpuRatios).toFixed(2)}`,
  );
} finally {
  for (const f of cleanup.reverse()) await f();
}
