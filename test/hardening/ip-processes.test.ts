/**
 * What a network call costs in iproute2: at most two runs for a
 * change, one read and one batch whose output is the read-back; one for a
 * call that changes nothing. Counted by a recording stand-in around the
 * real iproute2 in a netns (one record per exchange, with the PID that
 * answered it; a one-shot process is one exchange): with the resident
 * session (--ip-session on, the default) all of them exchanges with the ip
 * started with the agent, no process started per call; off, a process per
 * exchange. The result is checked by an independent read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Netns } from "../helpers/netns";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { type IpCall, isWriteCall, recordingIp } from "./fake-ip";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** The bare link check a session sends before a change when its last listing is not fresh. */
const isLinkCheck = (c: IpCall) => c.stdin === "link show\n";

describe.each(["on", "off"])("--ip-session %s", (mode) => {
  it("UpdateRoutes and UpdateInterface: two exchanges for a change, one when nothing changes; processes per call", async () => {
    const dir = tempDir("netagent-ipcount-");
    cleanup.push(() => dir.remove());
    const recorder = recordingIp(dir);
    const ns = await Netns.create("nt-ipn");
    cleanup.push(() => ns.remove());
    await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0f:01" });
    await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
    const agent = await startHardenedAgent({
      netns: ns,
      ipBin: recorder.bin,
      args: ["--ip-session", mode],
    });
    cleanup.push(() => agent.stop());
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    cleanup.push(() => client.close());
    const seen = new Set<number>();
    if (mode === "on") {
      // The agent starts its ip at start-up and takes a baseline listing; a
      // read while that runs takes a one-shot process. Wait until it answers.
      await waitFor(() => recorder.calls().length >= 1, {
        what: "the resident ip's first exchange",
      });
      const [first] = recorder.calls();
      await waitFor(
        async () => {
          const from = recorder.calls().length;
          await client.unary(AgentService.method.listInterfaces, {});
          return recorder.calls().slice(from)[0]?.pid === first?.pid;
        },
        { what: "a read answered by the resident ip" },
      );
      // Reads during the warm-up may have taken one-shot processes: from here on, none.
      seen.add(first?.pid as number);
    }
    const warm = recorder.calls().length;
    const count = async (call: () => Promise<unknown>) => {
      const from = recorder.calls().length;
      await call();
      const calls = recorder.calls().slice(from);
      const pids = new Set(calls.map((c) => c.pid));
      const started = [...pids].filter((p) => !seen.has(p)).length;
      for (const p of pids) seen.add(p);
      const checks = calls.filter(isLinkCheck).length;
      // A session checks the links before a change unless the call's own
      // read listed them moments before (ip-session.ts): at most one check.
      expect(checks, JSON.stringify(calls)).toBeLessThanOrEqual(mode === "on" ? 1 : 0);
      if (checks > 0) console.log(`a link check before the change (session ${mode})`);
      return {
        exchanges: calls.length - checks,
        writes: calls.filter(isWriteCall).length,
        started,
      };
    };
    // On: no call starts a process. Off: a process per exchange, as before the session.
    const started = (exchanges: number) => (mode === "on" ? 0 : exchanges);
    const routes = {
      routes: {
        Routes: [
          { dest: "10.9.0.0/16", gateway: "10.1.1.1", device: "eth0" },
          { gateway: "10.1.1.1", device: "eth0" },
        ],
      },
    };
    const update = () => client.unary(AgentService.method.updateRoutes, routes);
    expect(await count(update)).toEqual({ exchanges: 2, writes: 1, started: started(2) });
    expect(await count(update)).toEqual({ exchanges: 1, writes: 0, started: started(1) });
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
    expect(await count(iface)).toEqual({ exchanges: 2, writes: 1, started: started(2) });
    const [link] = await ns.json<{ mtu: number }[]>("link", "show", "dev", "eth0");
    expect(link?.mtu).toBe(1400);
    // On, every exchange since the warm-up was answered by the process started with the agent.
    const pids = new Set(
      recorder
        .calls()
        .slice(warm)
        .map((c) => c.pid),
    );
    expect(pids.size).toBe(mode === "on" ? 1 : recorder.calls().length);
    if (mode === "on") expect([...seen]).toEqual([...pids]);
  }, 60_000);
});
