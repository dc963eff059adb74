/**
 * What a network call costs in iproute2 (issue 13): at most two runs for a
 * change, one read and one batch whose output is the read-back; one for a
 * call that changes nothing; and all of them exchanges with the agent's
 * one resident ip, no process started per call. Counted by a recording
 * stand-in around the real iproute2 in a netns (one record per exchange,
 * with the PID that answered it), the result checked by an independent read.
 */
import { afterEach, expect, it } from "vitest";
import { AgentService } from "../../src/gen/agent_pb";
import { AgentClient } from "../../src/host/client";
import { Netns } from "../helpers/netns";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { isWriteCall, recordingIp } from "./fake-ip";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

it("UpdateRoutes and UpdateInterface: two exchanges for a change, one when nothing changes, one process", async () => {
  const dir = tempDir("netagent-ipcount-");
  cleanup.push(() => dir.remove());
  const recorder = recordingIp(dir);
  const ns = await Netns.create("nt-ipn");
  cleanup.push(() => ns.remove());
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0f:01" });
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  const agent = await startHardenedAgent({ netns: ns, ipBin: recorder.bin });
  cleanup.push(() => agent.stop());
  const client = await AgentClient.connect(`unix://${agent.socket}`);
  cleanup.push(() => client.close());
  // The agent starts its ip at start-up and takes a baseline listing; a
  // read while that runs takes a one-shot process. Wait until it answers.
  await waitFor(() => recorder.calls().length >= 1, { what: "the resident ip's first exchange" });
  const [first] = recorder.calls();
  await waitFor(
    async () => {
      const from = recorder.calls().length;
      await client.unary(AgentService.method.listInterfaces, {});
      return recorder.calls().slice(from)[0]?.pid === first?.pid;
    },
    { what: "a read answered by the resident ip" },
  );
  const counted = recorder.calls().length;
  const count = async (call: () => Promise<unknown>) => {
    const from = recorder.calls().length;
    await call();
    const calls = recorder.calls().slice(from);
    return { all: calls.length, writes: calls.filter(isWriteCall).length };
  };
  const routes = {
    routes: {
      Routes: [
        { dest: "10.9.0.0/16", gateway: "10.1.1.1", device: "eth0" },
        { gateway: "10.1.1.1", device: "eth0" },
      ],
    },
  };
  const update = () => client.unary(AgentService.method.updateRoutes, routes);
  expect(await count(update)).toEqual({ all: 2, writes: 1 });
  expect(await count(update)).toEqual({ all: 1, writes: 0 });
  const via = (await ns.json<{ dst: string; gateway?: string }[]>("route")).filter(
    (r) => r.gateway === "10.1.1.1",
  );
  expect(via.map((r) => r.dst).sort()).toEqual(["10.9.0.0/16", "default"]);

  const iface = () =>
    client.unary(AgentService.method.updateInterface, {
      interface: {
        hwAddr: "02:00:00:00:0f:01",
        name: "eth0",
        mtu: 1400n,
        IPAddresses: [{ address: "10.1.1.2", mask: "24" }],
      },
    });
  expect(await count(iface)).toEqual({ all: 2, writes: 1 });
  const [link] = await ns.json<{ mtu: number }[]>("link", "show", "dev", "eth0");
  expect(link?.mtu).toBe(1400);
  // Every exchange was answered by the process started with the agent.
  const pids = recorder
    .calls()
    .slice(counted)
    .map((c) => c.pid);
  expect(new Set(pids)).toEqual(new Set([first?.pid]));
}, 60_000);
