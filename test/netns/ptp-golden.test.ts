/**
 * The golden test: the real CNI ptp plugin builds a pod's network; its
 * interface and non-kernel routes are mirrored, as the Kata runtime does,
 * into UpdateInterface + UpdateRoutes for an agent in a third ("guest")
 * namespace whose link has the pod's MAC under another name. The guest's
 * main table must then equal the pod's, read independently with `ip`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { IPFamily } from "../../src/gen/types_pb";
import type { RunningAgent } from "../helpers/agent";
import { attachPtp, type CniAttachment } from "../helpers/cni";
import { Netns } from "../helpers/netns";
import { routeTable } from "./tables";

interface IpAddrInfo {
  family: string;
  local: string;
  prefixlen: number;
}
interface IpLink {
  ifname: string;
  address: string;
  mtu: number;
  addr_info: IpAddrInfo[];
}
interface IpRoute {
  v6?: boolean;
  dst: string;
  gateway?: string;
  dev: string;
  prefsrc?: string;
  scope?: string;
  protocol?: string;
}

const SCOPES: Record<string, number> = { global: 0, link: 253, host: 254 };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function ns(prefix: string): Promise<Netns> {
  const n = await Netns.create(prefix);
  cleanups.push(() => n.remove());
  return n;
}

/** What the Kata runtime sends for the pod's eth0 (docs/kata-runtime.md). */
async function mirror(pod: Netns) {
  const [eth0] = await pod.json<IpLink[]>("addr", "show", "dev", "eth0");
  if (!eth0) throw new Error("pod has no eth0");
  const routes: IpRoute[] = [
    ...(await pod.json<IpRoute[]>("route", "show", "table", "main")).map((r) => ({
      ...r,
      v6: false,
    })),
    ...(await pod.json<IpRoute[]>("-6", "route", "show", "table", "main")).map((r) => ({
      ...r,
      v6: true,
    })),
  ].filter((r) => r.protocol !== "kernel" && r.dev === "eth0");
  return {
    iface: {
      name: "eth0",
      device: "eth0",
      hwAddr: eth0.address,
      mtu: BigInt(eth0.mtu),
      IPAddresses: eth0.addr_info.map((a) => ({
        family: a.family === "inet6" ? IPFamily.v6 : IPFamily.v4,
        address: a.local,
        mask: String(a.prefixlen),
      })),
    },
    routes: routes.map((r) => ({
      dest: r.dst === "default" ? "" : r.dst,
      gateway: r.gateway ?? "",
      device: "eth0",
      source: r.prefsrc ?? "",
      scope: SCOPES[r.scope ?? "global"] ?? 0,
      family: r.v6 ? IPFamily.v6 : IPFamily.v4,
    })),
  };
}

async function guestFor(mac: string): Promise<{ guest: Netns; client: AgentClient }> {
  const guest = await ns("nt-guest");
  // The guest's NIC has the pod's MAC under the name the hypervisor gave it;
  // its other end is outside the guest, as the host's tap would be.
  const wire = await ns("nt-wire");
  await guest.veth("ens3", "wire0", { mac, peerNs: wire });
  const agent: RunningAgent = await guest.startAgent();
  cleanups.push(() => agent.stop());
  const client = await AgentClient.connect(`unix://${agent.socket}`);
  cleanups.push(async () => client.close());
  return { guest, client };
}

async function sync(client: AgentClient, pod: Netns) {
  const m = await mirror(pod);
  await client.unary(
    AgentService.method.updateInterface,
    { interface: m.iface },
    { timeoutMs: 10_000 },
  );
  await client.unary(
    AgentService.method.updateRoutes,
    { routes: { Routes: m.routes } },
    { timeoutMs: 10_000 },
  );
  return m;
}

describe("PTP golden test with the real CNI plugin", () => {
  it("IPv4: the guest's table equals the pod's, gateway kept on the subnet route", async () => {
    const host = await ns("nt-host");
    const pod = await ns("nt-pod");
    const cni: CniAttachment = await attachPtp(host, pod, { subnets: ["10.248.246.144/28"] });
    cleanups.push(() => cni.detach());

    const podTable = await routeTable(pod);
    // The pod's table as DESIGN.md gives it.
    expect(podTable.filter((l) => l.startsWith("v4"))).toEqual([
      expect.stringMatching(
        /^v4 10\.248\.246\.144\/28 via 10\.248\.246\.145 dev eth0 src 10\.248\.246\.14\d scope global metric 0$/,
      ),
      expect.stringMatching(
        /^v4 10\.248\.246\.145 dev eth0 src 10\.248\.246\.14\d scope link metric 0$/,
      ),
      "v4 default via 10.248.246.145 dev eth0 scope global metric 0",
    ]);

    const [eth0] = await pod.json<IpLink[]>("link", "show", "dev", "eth0");
    const { guest, client } = await guestFor(eth0?.address ?? "");
    await sync(client, pod);
    expect(await routeTable(guest)).toEqual(podTable);
    const [g] = await guest.json<IpLink[]>("addr", "show", "dev", "eth0");
    expect(g?.mtu).toBe(eth0?.mtu);
  });

  it("dual stack: IPv4 and IPv6 tables equal, and a second sync with another route set removes the stale ones", async () => {
    const host = await ns("nt-host");
    const pod = await ns("nt-pod");
    const cni = await attachPtp(host, pod, {
      subnets: ["10.248.246.144/28", "fd00:248::/64"],
      routes: ["0.0.0.0/0", "::/0", "198.51.100.0/24"],
    });
    cleanups.push(() => cni.detach());
    const [eth0] = await pod.json<IpLink[]>("link", "show", "dev", "eth0");
    const { guest, client } = await guestFor(eth0?.address ?? "");

    await sync(client, pod);
    const podTable = await routeTable(pod);
    expect(podTable.some((l) => l.startsWith("v6 default via"))).toBe(true);
    expect(podTable).toContain(
      "v4 198.51.100.0/24 via 10.248.246.145 dev eth0 scope global metric 0",
    );
    expect(await routeTable(guest)).toEqual(podTable);

    // The pod loses a route and gains one; the next sync must follow exactly.
    await pod.ip("route", "del", "198.51.100.0/24");
    await pod.ip("route", "add", "203.0.113.0/24", "via", "10.248.246.145", "dev", "eth0");
    await sync(client, pod);
    const podTable2 = await routeTable(pod);
    expect(podTable2).not.toEqual(podTable);
    expect(await routeTable(guest)).toEqual(podTable2);
  });
});
