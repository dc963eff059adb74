/**
 * A transcript of `netagentctl sync --watch` following a pod (as root):
 * a CNI ptp pod (real plugin, from a private host netns) and an agent in a
 * guest netns; routes added and removed, an address changed, a packet
 * filter rule, a burst of 1,000 routes, a NIC added (its guest twin a second
 * later, as a hot-plug) and removed, the agent restarted, then the pod
 * deleted. Prints the commands run in the pod and the watcher's own lines.
 *
 *   npm run build && bun scripts/watch-demo.ts
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { agentAt } from "../test/helpers/agent";
import { run } from "../test/helpers/process";
import { waitFor } from "../test/helpers/wait";
import { Guest, NETAGENTCTL, PtpPod, randomMac, tempDir } from "../test/host/helpers";
import { addPodNic, guestEqualsPod } from "../test/host/watch-helpers";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (text: string) => process.stdout.write(`# ${text}\n`);

const pod = await PtpPod.create("10.248.250.0/28");
const mac0 = await pod.mac();
const guest = await Guest.create(mac0);
await guest.agent.stop();
const dir = tempDir("netagent-watch-demo-");
const socket = dir.join("agent.sock");
let agent = await agentAt(guest.ns, socket);
const p = pod.pod.name;
const ip = async (...args: string[]) => {
  say(`ip -n POD ${args.join(" ")}`);
  await pod.pod.ip(...args);
};
const settle = (macs = [mac0]) =>
  waitFor(() => guestEqualsPod(pod.pod, guest.ns, macs), { timeoutMs: 30_000, what: "guest" });

say(`netagentctl --addr unix://AGENT sync --watch --netns POD   (POD = ${p})`);
const watch = spawn(NETAGENTCTL, ["--addr", `unix://${socket}`, "sync", "--watch", "--netns", p], {
  stdio: ["ignore", "pipe", "inherit"],
});
watch.stdout.on("data", (d: Buffer) =>
  process.stdout.write(`  | ${d.toString()}`.replace(/\n(?=.)/g, "\n  | ")),
);
try {
  await pause(1500);
  await settle();
  await ip("route", "add", "192.0.2.0/24", "via", "10.248.250.1", "dev", "eth0");
  await settle();
  await pause(300);
  await ip("-6", "addr", "add", "2001:db8:14::2/64", "dev", "eth0", "nodad");
  await settle();
  await pause(300);
  await ip("route", "del", "192.0.2.0/24");
  await settle();
  await pause(300);
  say("ip netns exec POD iptables -A INPUT -s 192.0.2.7 -j DROP");
  await run("ip", ["netns", "exec", p, "iptables", "-A", "INPUT", "-s", "192.0.2.7", "-j", "DROP"]);
  await pause(800);
  say("ip -n POD -batch FILE   (1,000 route adds)");
  const file = dir.join("burst");
  writeFileSync(
    file,
    Array.from(
      { length: 1000 },
      (_, i) => `route add 100.64.${i >> 8}.${i & 255}/32 via 10.248.250.1 dev eth0\n`,
    ).join(""),
  );
  await pod.pod.ip("-batch", file);
  await settle();
  await pause(500);
  const mac1 = randomMac();
  say(`a NIC appears in the pod: eth1 ${mac1}, 10.14.1.2/24, a route via it`);
  await addPodNic(pod.pod, pod.host, "eth1", "hdemo1", mac1);
  await pod.pod.ip("addr", "add", "10.14.1.2/24", "dev", "eth1");
  await pod.pod.ip("route", "add", "10.14.64.0/18", "via", "10.14.1.1", "dev", "eth1");
  await pause(1000);
  say("... and a second later its twin is hot-plugged into the guest");
  await guest.ns.ip(
    "link",
    "add",
    "gst1p",
    "type",
    "veth",
    "peer",
    "name",
    "gst1",
    "address",
    mac1,
  );
  await guest.ns.ip("link", "set", "gst1p", "up");
  await settle([mac0, mac1]);
  await pause(500);
  await ip("link", "del", "eth1");
  await settle();
  await pause(500);
  say("the agent is restarted");
  await agent.stop("SIGTERM");
  await pause(800);
  agent = await agentAt(guest.ns, socket);
  await pause(3000);
  await ip("route", "add", "198.51.100.0/24", "via", "10.248.250.1", "dev", "eth0");
  await settle();
  await pause(500);
  say("the pod is deleted (CNI DEL, ip netns del)");
  await pod.remove();
  const code = await new Promise<number | null>((resolve) => watch.once("exit", (c) => resolve(c)));
  say(`netagentctl exited with ${code}`);
} finally {
  if (watch.exitCode === null) watch.kill("SIGKILL");
  await agent.kill();
  await guest.ns.remove();
  await pod.remove().catch(() => {});
  dir.remove();
}
