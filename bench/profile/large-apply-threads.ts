/**
 * Where row 12's Apply (bench/rows/large-state.ts) spends the agent's CPU,
 * thread by thread: each of the agent's threads' CPU (schedstat, by thread
 * name: the main thread, JavaScriptCore's JIT workers and collector
 * helpers, the allocator's scavenger) and its minor page faults, over
 * `--runs` Applies, each from the flushed guest as row 12 runs it. `--env`
 * adds variables to the agent's environment (e.g. an allocator setting, to
 * see what it changes); the RSS after the last run is printed with them.
 *
 *   bun bench/profile/large-apply-threads.ts [--bin PATH] [--runs 6] [--env "K=V ..."]
 */
import { readdirSync, readFileSync } from "node:fs";
import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { startAgent } from "../../test/helpers/agent";
import { Netns, randomMac } from "../../test/helpers/netns";
import { addVeth } from "../../test/host/helpers";
import { largeState } from "../../test/support/large-state";
import { option } from "../lib/args";
import { median } from "../lib/stats";
import { flushLargeState } from "../rows/large-state";

const bin = option("--bin", "");
const runs = Number(option("--runs", "6"));
const env = Object.fromEntries(
  option("--env", "")
    .split(" ")
    .filter((kv) => kv.includes("="))
    .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
);

/** CPU ns of each live thread of `pid`, by "name#tid". */
function threads(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${t}/comm`, "utf8").trim();
      const ns = Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
      out.set(`${name}#${t}`, ns);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** Minor page faults of the whole process so far (/proc/PID/stat field 10). */
const minorFaults = (pid: number) =>
  Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[7]);

const ns = await Netns.create("nh12th");
try {
  const macs = [randomMac(), randomMac()];
  await addVeth(ns, "eth0", macs[0] as string);
  await addVeth(ns, "eth1", macs[1] as string);
  const agent = await startAgent({ netns: ns, env, ...(bin ? { binary: bin } : {}) });
  try {
    const pid = agent.child.pid as number;
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    await client.unary(Network.method.apply, { desired: largeState(macs) }, { timeoutMs: 120_000 });
    const desired = await client.unary(Network.method.get, {});
    const byName = new Map<string, number>();
    const walls: number[] = [];
    const faults: number[] = [];
    for (let i = 0; i < runs; i++) {
      await flushLargeState(ns.name);
      const before = threads(pid);
      const f0 = minorFaults(pid);
      const t0 = performance.now();
      await client.unary(Network.method.apply, { desired, exact: true }, { timeoutMs: 120_000 });
      walls.push(performance.now() - t0);
      faults.push(minorFaults(pid) - f0);
      for (const [k, v] of threads(pid)) {
        const name = k.slice(0, k.lastIndexOf("#"));
        byName.set(name, (byName.get(name) ?? 0) + v - (before.get(k) ?? 0));
      }
    }
    client.close();
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (f: string) => status.match(new RegExp(`${f}:\\s+(\\d+) kB`))?.[1];
    console.log(`agent ${bin || "dist/netagent"} ${JSON.stringify(env)}, ${runs} Applies`);
    console.log(
      `wall per Apply: median ${median(walls).toFixed(0)} ms (${walls.map((w) => w.toFixed(0)).join(" ")})`,
    );
    console.log(`minor page faults per Apply: median ${median(faults)} (${faults.join(" ")})`);
    console.log(`after the last: VmHWM ${kib("VmHWM")} KiB, RssAnon ${kib("RssAnon")} KiB`);
    for (const [name, cpu] of [...byName].sort((x, y) => y[1] - x[1])) {
      if (cpu / runs >= 1e6)
        console.log(`  ${name}: ${(cpu / 1e6 / runs).toFixed(1)} ms CPU per Apply`);
    }
  } finally {
    await agent.stop();
  }
} finally {
  await ns.remove();
}
