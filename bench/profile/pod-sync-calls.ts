/**
 * Where a pod's sync spends its time: each of row 8's four calls (Check,
 * UpdateInterface, UpdateRoutes, AddARPNeighbors of a real CNI ptp pod)
 * timed on its own from the client, next to the floor's one `ip -batch`
 * (run after each sync, the guest put back between). Medians over the
 * runs; `--runs 300` shows what a warm agent and client come to.
 *
 *   bun bench/profile/pod-sync-calls.ts [--runs 31] [--args "AGENT FLAGS"] [--bin PATH]
 */

import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import { startAgent } from "../../test/helpers/agent";
import { Netns } from "../../test/helpers/netns";
import { addVeth } from "../../test/host/helpers";
import { ptpSync } from "../lib/ptp-pod";
import { median } from "../lib/stats";
import { floorBatch } from "../rows/pod-sync";
import { timeIp } from "../rows/update-routes";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const runs = Number(opt("--runs", "31"));
const args = opt("--args", "")
  .split(" ")
  .filter((x) => x !== "");
const binary = opt("--bin", "");

const { pod, req, iface } = await ptpSync();
const cleanup: (() => Promise<void> | void)[] = [() => pod.remove()];
try {
  const ns = await Netns.create("nh5pc");
  cleanup.push(() => ns.remove());
  await addVeth(ns, "gst0", iface.hwAddr);
  const agent = await startAgent({ args, netns: ns, ...(binary ? { binary } : {}) });
  cleanup.push(() => agent.stop());
  const client = await AgentClient.connect(`unix://${agent.socket}`);
  cleanup.push(() => client.close());
  const calls = ["Check", "UpdateInterface", "UpdateRoutes", "AddARPNeighbors", "sync", "floor"];
  const t = new Map(calls.map((c) => [c, [] as number[]]));
  const flush = async () => {
    await ns.ip("neigh", "flush", "dev", iface.name, "nud", "permanent").catch(() => "");
    await ns.ip("route", "flush", "dev", iface.name).catch(() => "");
    await ns.ip("addr", "flush", "dev", iface.name).catch(() => "");
  };
  const batch = floorBatch(req);
  const back = { hwAddr: iface.hwAddr, mtu: iface.mtu, name: "gst0" };
  for (let i = -2; i < runs; i++) {
    await flush();
    await client.unary(AgentService.method.updateInterface, { interface: back });
    const at = [performance.now()];
    await client.unary(Health.method.check, {});
    at.push(performance.now());
    await client.unary(AgentService.method.updateInterface, { interface: iface });
    at.push(performance.now());
    await client.unary(AgentService.method.updateRoutes, { routes: { Routes: req.routes } });
    at.push(performance.now());
    const neighbors = { ARPNeighbors: req.neighbors };
    await client.unary(AgentService.method.addARPNeighbors, { neighbors });
    at.push(performance.now());
    // The floor from the same starting state (the name put back by ip).
    await flush();
    await ns.ip("link", "set", "dev", iface.name, "down");
    await ns.ip("link", "set", "dev", iface.name, "name", "gst0");
    await ns.ip("link", "set", "dev", "gst0", "up");
    const floor = (await timeIp(["-n", ns.name, "-batch", "-"], batch)).ms;
    if (i < 0) continue; // warm-up
    for (let k = 0; k < 4; k++)
      t.get(calls[k] as string)?.push((at[k + 1] as number) - (at[k] as number));
    t.get("sync")?.push((at[4] as number) - (at[0] as number));
    t.get("floor")?.push(floor);
  }
  for (const [k, v] of t) console.log(`${k.padEnd(16)} median ${median(v).toFixed(2)} ms`);
} finally {
  for (const f of cleanup.reverse()) await f();
}
