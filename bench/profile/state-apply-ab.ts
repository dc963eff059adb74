/**
 * Row 10's Apply (the ptp + tuning + sbr pod's whole state, exact) into two
 * agents side by side, each in its own guest netns with its own NIC, started
 * from different builds or flags: A and B interleaved (A B / B A), each guest
 * put back to the same starting state before every run (bench/rows/state-apply.ts),
 * each checked by independent reads after its first Apply. Besides the wall
 * time, each agent's CPU per Apply (bench/lib/cpu-time.ts), steadier under load.
 *
 *   bun bench/profile/state-apply-ab.ts [--pairs 31] [--a-bin PATH] [--b-bin PATH]
 *                                       [--a "FLAGS"] [--b "FLAGS"]
 *
 * (--a-bin/--b-bin: another build than dist/netagent for that side; --a/--b:
 * more agent flags, e.g. "--state-dir /dev/shm/X" for a journal on tmpfs.)
 */

import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { readFreshDefaults, readPodFullState } from "../../src/host/pod/pod-state";
import { applyRequestFor } from "../../src/host/sync/drive-state";
import { startAgent } from "../../test/helpers/agent";
import { Netns } from "../../test/helpers/netns";
import { addVeth } from "../../test/host/helpers";
import { ChainPod, ptpTuningSbr } from "../../test/host/state-helpers";
import { option } from "../lib/args";
import { threadsCpuNs } from "../lib/cpu-time";
import { interleave } from "../lib/interleave";
import { median } from "../lib/stats";
import { checkGuest, GUEST_IF, resetGuest } from "../rows/state-apply";

const pairs = Number(option("--pairs", "31"));
const flags = (s: string) => s.split(" ").filter((x) => x !== "");
const sides = {
  a: { bin: option("--a-bin", ""), args: flags(option("--a", "")) },
  b: { bin: option("--b-bin", ""), args: flags(option("--b", "")) },
};

const cleanup: (() => Promise<unknown>)[] = [];
try {
  const pod = await ChainPod.create();
  cleanup.push(() => pod.remove());
  await pod.attach(ptpTuningSbr());
  const mac = await pod.mac();
  const guest = async (side: { bin: string; args: string[] }) => {
    const ns = await Netns.create("nh10ab");
    cleanup.push(() => ns.remove());
    await addVeth(ns, GUEST_IF, mac);
    const agent = await startAgent({
      args: side.args,
      netns: ns,
      ...(side.bin ? { binary: side.bin } : {}),
    });
    cleanup.push(() => agent.stop());
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    cleanup.push(async () => client.close());
    await resetGuest(ns);
    return { ns, client, pid: agent.child.pid, times: [] as number[], cpu: [] as number[] };
  };
  const a = await guest(sides.a);
  const b = await guest(sides.b);
  // One request for both: the guests start from the same state.
  const full = await readPodFullState(pod.pod.name);
  const { request } = applyRequestFor(
    full,
    await a.client.unary(Network.method.get, {}),
    await readFreshDefaults(),
  );
  const run = (g: typeof a, what: string) => async (first: boolean) => {
    await resetGuest(g.ns);
    const c0 = threadsCpuNs(g.pid);
    const t0 = performance.now();
    await g.client.unary(Network.method.apply, request, { timeoutMs: 30_000 });
    g.times.push(performance.now() - t0);
    g.cpu.push((threadsCpuNs(g.pid) - c0) / 1e6);
    if (first) await checkGuest(g.ns, what);
  };
  await run(a, "A")(true);
  await run(b, "B")(true);
  for (const g of [a, b]) {
    g.times.length = 0;
    g.cpu.length = 0;
  }
  await interleave(pairs, run(a, "A"), run(b, "B"));
  const ratios = b.times.map((x, i) => x / (a.times[i] as number));
  const cpuRatios = b.cpu.map((x, i) => x / (a.cpu[i] as number));
  const name = (s: { bin: string; args: string[] }) =>
    `${s.bin || "dist/netagent"} ${s.args.join(" ") || "(defaults)"}`;
  console.log(`A ${name(sides.a)}: median ${median(a.times).toFixed(2)} ms`);
  console.log(`B ${name(sides.b)}: median ${median(b.times).toFixed(2)} ms`);
  console.log(`B/A median of per-pair ratios: ${median(ratios).toFixed(2)} (${pairs} pairs)`);
  console.log(
    `agent CPU per Apply (its threads, schedstat): A ${median(a.cpu).toFixed(2)} ms, B ${median(b.cpu).toFixed(2)} ms, B/A median of per-pair ratios ${median(cpuRatios).toFixed(2)}`,
  );
} finally {
  for (const f of cleanup.reverse()) await f();
}
