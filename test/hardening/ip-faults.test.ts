/**
 * The network calls when iproute2 or the kernel misbehave, against
 * dist/netagent in a fresh netns, results read with an independent `ip`:
 * the read that plans a restore failing, a wedged ip and a call cancelled
 * while its batch runs, a stale route the kernel removed meanwhile, and a
 * hot-plug wait beside other network changes.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService, type UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { IPFamily, type Route } from "../../src/gen/types_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { Netns } from "../helpers/netns";
import { pidAlive } from "../helpers/process";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { faultyIp } from "./faulty-ip";
import { waitForResident } from "./ip-standin/log";

type RouteInit = Partial<Omit<Route, "$typeName">>;

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/**
 * A netns with eth0 (10.1.1.2/24) and eth1 (192.0.2.2/24), an agent using a
 * faulty ip with the resident session on or off, a client.
 */
async function setup(ipSession = "on", standin = true) {
  const dir = tempDir("netagent-ipfault-");
  cleanup.push(() => dir.remove());
  const ip = faultyIp(dir);
  const ns = await Netns.create("nt-ipf");
  cleanup.push(() => ns.remove());
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0e:01" });
  await ns.veth("eth1", "peer1", { mac: "02:00:00:00:0e:02" });
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  await ns.ip("addr", "add", "192.0.2.2/24", "dev", "eth1");
  const agent = await startHardenedAgent({
    netns: ns,
    args: ["--log-level", "debug", "--ip-session", ipSession],
    ...(standin ? { ipBin: ip.bin } : {}),
  });
  cleanup.push(() => agent.stop());
  const client = await AgentClient.connect(`unix://${agent.socket}`);
  cleanup.push(() => client.close());
  if (ipSession === "on" && standin) {
    // So that the faults below hit the resident ip, not a one-shot one.
    await waitForResident(ip.bin, () => client.unary(AgentService.method.listInterfaces, {}));
  }
  const update = (routes: RouteInit[], timeoutMs = 60_000) => {
    const req: MessageInitShape<typeof UpdateRoutesRequestSchema> = { routes: { Routes: routes } };
    return client.unary(AgentService.method.updateRoutes, req, { timeoutMs });
  };
  return { ns, ip, agent, client, update };
}

async function refusal(p: Promise<unknown>): Promise<TtrpcError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected the call to fail").toBeInstanceOf(TtrpcError);
  return err as TtrpcError;
}

/** n host routes via 10.1.1.1 on eth0. */
const hostRoutes = (n: number, base = 100): RouteInit[] =>
  Array.from({ length: n }, (_, i) => ({
    dest: `10.${base}.${i >> 8}.${i & 255}/32`,
    gateway: "10.1.1.1",
    device: "eth0",
  }));

describe.each(["on", "off"])("--ip-session %s", (mode) => {
  // On, the faults hit exchanges of the resident ip; off, processes of their own.
  describe("the read that plans a restore fails", () => {
    it("UpdateRoutes: the table is still restored, the answer names the route that failed", async () => {
      const { ns, ip, agent, update } = await setup(mode);
      await update(hostRoutes(20, 50));
      const before = await ns.routeDump();
      const routes = hostRoutes(40);
      routes[30] = { dest: "203.0.113.0/24", gateway: "172.31.9.9", device: "eth0" };
      ip.failReadsAfterFailedWrite(5);
      const err = await refusal(update(routes));
      expect(ip.failedReads()).toBeGreaterThan(0);
      expect(err.code).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toMatch(/^route 203\.0\.113\.0\/24 via 172\.31\.9\.9 dev eth0: /);
      expect(await ns.routeDump()).toBe(before);
      expect(agent.child.stderr).toMatch(/cannot read the routes to restore them/);
      expect(agent.child.stderr).toMatch(/restored state after a failed change/);
    }, 60_000);

    it("UpdateInterface: a failed read is tried again and the link restored", async () => {
      const { ns, ip, agent, client } = await setup(mode);
      const link = async () => {
        const [l] = await ns.json<
          { ifname: string; mtu: number; addr_info: { local: string }[] }[]
        >(
          "addr",
          "show",
          "dev",
          (await ns.json<{ ifname: string; address: string }[]>("link")).find(
            (x) => x.address === "02:00:00:00:0e:01",
          )?.ifname as string,
        );
        return { name: l?.ifname, mtu: l?.mtu, addresses: l?.addr_info.map((a) => a.local).sort() };
      };
      const before = await link();
      // rename, MTU, address changes: ip dies on line 3, and the first read after fails.
      ip.dieOnLine(3);
      ip.failReadsAfterFailedWrite(1);
      const err = await refusal(
        client.unary(AgentService.method.updateInterface, {
          interface: {
            hwAddr: "02:00:00:00:0e:01",
            name: "eth7",
            mtu: 1400n,
            IPAddresses: [{ address: "10.9.9.2", mask: "24" }],
          },
        }),
      );
      expect(ip.failedReads()).toBe(1);
      if (mode === "on") expect(ip.faultAfter()).toBeGreaterThan(0);
      else expect(ip.faultAfter()).toBe(0);
      expect(err.message).toMatch(/^interface 02:00:00:00:0e:01: .*killed by SIGKILL/);
      expect(await link()).toEqual(before);
      expect(agent.child.stderr).toMatch(/restored state after a failed change/);
    }, 60_000);
  });

  describe("a change cut short", () => {
    it("AddARPNeighbors: ip dies on line 3; the entries are as before, and the restore says restored, not incomplete", async () => {
      const { ns, ip, agent, client } = await setup(mode);
      await ns.ip(
        "neigh",
        "add",
        "10.1.1.10",
        "lladdr",
        "02:00:00:00:0f:10",
        "dev",
        "eth0",
        "nud",
        "permanent",
      );
      const entries = async () =>
        (
          await ns.json<{ dst: string; lladdr?: string; state?: string[] }[]>(
            "neigh",
            "show",
            "dev",
            "eth0",
          )
        )
          .filter((n) => n.dst.startsWith("10.1.1."))
          .map((n) => `${n.dst} ${n.lladdr} ${n.state}`)
          .sort();
      const before = await entries();
      expect(before).toEqual(["10.1.1.10 02:00:00:00:0f:10 PERMANENT"]);
      // The first replaces .10, the next four are new: lines 3-5 never run.
      const ARPNeighbors = [10, 11, 12, 13, 14].map((i) => ({
        toIPAddress: { family: IPFamily.v4, address: `10.1.1.${i}`, mask: "" },
        device: "eth0",
        lladdr: `02:00:00:00:0f:${i + 10}`,
        state: 0,
      }));
      ip.dieOnLine(3);
      await refusal(
        client.unary(AgentService.method.addARPNeighbors, { neighbors: { ARPNeighbors } }),
      );
      expect(await entries()).toEqual(before);
      expect(agent.child.stderr).toMatch(/restored state after a failed change/);
      expect(agent.child.stderr).not.toMatch(/restore incomplete/);
    }, 60_000);
  });
});

describe.each(["on", "off"])("--ip-session %s, a wedged ip and the kernel meanwhile", (mode) => {
  describe("a wedged ip, a cancelled call", () => {
    it("the deadline kills the wedged batch (by PID), the half-applied table is restored, the next call runs", async () => {
      const { ns, ip, agent, update } = await setup(mode);
      const before = await ns.routeDump();
      ip.wedgeNextWrite();
      const err = await refusal(update(hostRoutes(400), 3_000));
      expect(err.code).toBe(Code.DEADLINE_EXCEEDED);
      await waitFor(() => /restored state after a failed change/.test(agent.child.stderr), {
        timeoutMs: 30_000,
        what: "the restore",
      });
      const pid = ip.faultPid() as number;
      // On, the wedged process is the resident one (it answered the call's read); off, a fresh one.
      if (mode === "on") expect(ip.faultAfter()).toBeGreaterThan(0);
      else expect(ip.faultAfter()).toBe(0);
      expect(pid).toBeGreaterThan(0);
      expect(pidAlive(pid)).toBe(false);
      expect(await ns.routeDump()).toBe(before);
      // The write queue is free again.
      await update(hostRoutes(10));
      expect(
        (await ns.ip("route", "show")).split("\n").filter((l) => l.includes("via")),
      ).toHaveLength(10);
    }, 60_000);
  });

  describe("the kernel acting meanwhile", () => {
    it("a stale route removed by the kernel before its delete: counts as done", async () => {
      const { ns, ip, agent, update } = await setup(mode);
      await update([
        ...hostRoutes(5),
        { dest: "198.51.100.0/24", gateway: "192.0.2.1", device: "eth1" },
      ]);
      // The stale 198.51.100.0/24 goes away by itself just before the batch.
      ip.beforeNextWrite(["route del 198.51.100.0/24 via 192.0.2.1 dev eth1"]);
      await update(hostRoutes(3));
      const routes = await ns.json<{ dst: string; gateway?: string; dev: string }[]>("route");
      expect(
        routes
          .filter((r) => r.gateway)
          .map((r) => `${r.dst} ${r.gateway} ${r.dev}`)
          .sort(),
      ).toEqual([0, 1, 2].map((i) => `10.100.0.${i} 10.1.1.1 eth0`));
      expect(agent.child.stderr).toMatch(/stale route already gone.*198\.51\.100\.0\/24/);
    }, 60_000);
  });
});

/** PIDs of the processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // "PID (comm) STATE PPID ...": comm may hold spaces, so read after its ')'.
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid)
        out.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

describe("the resident ip ending between calls", () => {
  it.each([
    ["iproute2's ip", false],
    ["a stand-in", true],
  ])(
    "%s killed (SIGKILL) while idle: the next call starts another and succeeds",
    async (_, standin) => {
      const { ns, agent, update } = await setup("on", standin);
      await update(hostRoutes(3));
      const [resident, ...others] = childrenOf(agent.child.pid);
      expect(others).toEqual([]);
      process.kill(resident as number, "SIGKILL");
      await waitFor(() => !childrenOf(agent.child.pid).includes(resident as number), {
        what: "the resident ip to be gone",
      });
      await update(hostRoutes(5));
      expect(
        (await ns.ip("route", "show")).split("\n").filter((l) => l.includes("via")),
      ).toHaveLength(5);
      const [next] = childrenOf(agent.child.pid);
      expect(next).toBeGreaterThan(0);
      expect(next).not.toBe(resident);
    },
    60_000,
  );
});

describe("the resident ip outliving its agent", () => {
  it.each(["SIGTERM", "SIGKILL"] as const)(
    "the agent ended by %s: its resident ip ends too",
    async (signal) => {
      const { agent, update } = await setup("on", false);
      await update(hostRoutes(3));
      const [resident] = childrenOf(agent.child.pid);
      expect(resident).toBeGreaterThan(0);
      await agent.child.stop(signal);
      // Its stdin closes with the agent: iproute2 reads EOF and exits.
      await waitFor(() => !pidAlive(resident as number), { what: "the resident ip to exit" });
    },
    60_000,
  );
});

describe("hot-plug", () => {
  it("waiting for an absent MAC holds up no other network change; the link's arrival ends the wait", async () => {
    const { ns, client, update } = await setup();
    let settled = false;
    const wait = client
      .unary(
        AgentService.method.updateInterface,
        { interface: { hwAddr: "02:00:00:00:0e:09", name: "eth9", mtu: 1400n } },
        { timeoutMs: 3_600_000 },
      )
      .finally(() => {
        settled = true;
      });
    await update(hostRoutes(3));
    expect(settled).toBe(false);
    // The MAC given at creation: the agent renames the link as soon as the
    // MAC appears, so a later `link set late0 ...` could find it gone.
    await ns.ip(
      "link",
      "add",
      "late0",
      "address",
      "02:00:00:00:0e:09",
      "type",
      "veth",
      "peer",
      "name",
      "peer9",
    );
    await ns.ip("link", "set", "peer9", "up");
    const iface = await wait;
    expect(iface.name).toBe("eth9");
    const [l] = await ns.json<{ ifname: string; mtu: number }[]>("link", "show", "dev", "eth9");
    expect(l?.mtu).toBe(1400);
  }, 60_000);
});
