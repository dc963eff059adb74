/**
 * The policy's cost per Kata call, without a pod: two agents side by side,
 * each in its own guest netns with one veth, one without a policy and one
 * under an open policy (every check runs, none refuses); 40 rounds of
 * UpdateInterface (back to gst0, then eth0 with an address) and
 * UpdateRoutes, the two agents' order alternating round by round; medians
 * per call.
 *
 *   bun bench/profile/policy-calls-ab.ts
 */
import { writeFileSync } from "node:fs";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { startAgent } from "../../test/helpers/agent";
import { Netns } from "../../test/helpers/netns";
import { tempDir } from "../../test/helpers/tmp";
import { addVeth } from "../../test/host/helpers";
import { median } from "../lib/stats";

const MAC = "02:00:00:00:44:01";
const mk = async (args: string[]) => {
  const ns = await Netns.create("nhab");
  await addVeth(ns, "gst0", MAC);
  const agent = await startAgent({ args, netns: ns });
  const client = await AgentClient.connect(`unix://${agent.socket}`);
  return { ns, agent, client, t: { ui: [] as number[], back: [] as number[], ur: [] as number[] } };
};
const dir = tempDir("netagent-policy-calls-");
const policy = {
  netagentPolicy: 1,
  interfaces: { macs: "any", names: "any", max: 10, mtu: { min: 68, max: 65535 }, flags: ["down"] },
  addresses: { ipv4: { within: ["0.0.0.0/0"] }, ipv6: { within: ["::/0"] }, perInterface: 10 },
  routes: { destinations: { within: ["0.0.0.0/0", "::/0"] }, gateways: ["0.0.0.0/0", "::/0"] },
  neighbours: { ips: ["0.0.0.0/0", "::/0"], lladdrs: "any" },
  reads: true,
};
writeFileSync(dir.join("policy.json"), JSON.stringify(policy));
const sides = [await mk([]), await mk(["--policy", dir.join("policy.json")])];
const ui = {
  interface: {
    hwAddr: MAC,
    name: "eth0",
    mtu: 1500n,
    IPAddresses: [{ family: 0, address: "10.248.246.146", mask: "28" }],
  },
};
const back = { interface: { hwAddr: MAC, name: "gst0", mtu: 1500n } };
const ur = {
  routes: {
    Routes: [
      {
        dest: "10.248.246.145/32",
        device: "eth0",
        scope: 253,
        family: 0,
        source: "10.248.246.146",
      },
      { dest: "0.0.0.0/0", gateway: "10.248.246.145", device: "eth0", family: 0 },
    ],
  },
};
for (let i = 0; i < 40; i++) {
  for (const s of i % 2 ? [...sides].reverse() : sides) {
    let t = performance.now();
    await s.client.unary(AgentService.method.updateInterface, back as never);
    s.t.back.push(performance.now() - t);
    t = performance.now();
    await s.client.unary(AgentService.method.updateInterface, ui as never);
    s.t.ui.push(performance.now() - t);
    t = performance.now();
    await s.client.unary(AgentService.method.updateRoutes, ur as never);
    s.t.ur.push(performance.now() - t);
  }
}
const [none, withPolicy] = sides as [(typeof sides)[0], (typeof sides)[0]];
for (const [n, s] of [
  ["none", none],
  ["policy", withPolicy],
] as const) {
  const m = (xs: number[]) => median(xs).toFixed(2);
  console.log(
    `${n}: UpdateInterface back ${m(s.t.back)}, UpdateInterface ${m(s.t.ui)}, UpdateRoutes ${m(s.t.ur)} ms`,
  );
}
for (const s of sides) {
  s.client.close();
  await s.agent.stop();
  await s.ns.remove();
}
dir.remove();
