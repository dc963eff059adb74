/**
 * Row 8: a typical pod's whole sync, the shim's start-up path. A real CNI
 * ptp pod (host-local IPAM: 1 NIC, 3 routes) plus one permanent neighbour
 * is read once into requests; each run then sends them to a fresh-state
 * guest netns the way the runtime does (Check, UpdateInterface,
 * UpdateRoutes, AddARPNeighbors), timed from the first request to the last
 * answer. The floor makes the same changes with one `ip -n GUEST -batch -`.
 * Runs alternate A B / B A; the guest is put back to the same starting
 * state (link `gst0` up, no addresses, routes or neighbours) before each.
 */
import { AgentClient } from "../../src/host/client";
import { syncAgent } from "../../src/host/drive-agent";
import { readPodRequests, type SyncRequests } from "../../src/host/pod-requests";
import { Guest, PtpPod } from "../../test/host/helpers";
import { interleave } from "../lib/interleave";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";
import { timeIp } from "./update-routes";

const GUEST_IF = "gst0";
const NEIGHBOR_MAC = "02:00:00:00:0b:01";

/** The batch a hand-written script would feed `ip` for the same end state. */
export function floorBatch(req: SyncRequests): string {
  const lines: string[] = [];
  for (const i of req.interfaces) {
    lines.push(`link set dev ${GUEST_IF} down`, `link set dev ${GUEST_IF} name ${i.name}`);
    if (i.mtu > 0n) lines.push(`link set dev ${i.name} mtu ${i.mtu}`);
    for (const a of i.IPAddresses) {
      const v6 = a.address.includes(":");
      lines.push(`address replace ${a.address}/${a.mask} dev ${i.name}${v6 ? " nodad" : ""}`);
    }
    lines.push(`link set dev ${i.name} up`);
  }
  // Device routes first, so the gateways are reachable.
  const sorted = [...req.routes].sort((a, b) => Number(!!a.gateway) - Number(!!b.gateway));
  for (const r of sorted) {
    const words = ["route", "replace", r.dest || "default"];
    if (r.gateway) words.push("via", r.gateway);
    words.push("dev", r.device);
    if (r.source) words.push("src", r.source);
    if (r.scope === 253) words.push("scope", "link");
    lines.push(words.join(" "));
  }
  for (const n of req.neighbors) {
    lines.push(
      `neigh replace ${n.toIPAddress?.address} lladdr ${n.lladdr} dev ${n.device} nud permanent`,
    );
  }
  return `${lines.join("\n")}\n`;
}

export async function podSyncRows(pairs: number): Promise<Row[]> {
  const pod = await PtpPod.create();
  let guest: Guest | undefined;
  let client: AgentClient | undefined;
  try {
    const gw = (pod.result as { ips?: { gateway?: string }[] }).ips?.[0]?.gateway;
    if (!gw) throw new Error("ptp result has no gateway");
    await pod.pod.ip("neigh", "add", gw, "lladdr", NEIGHBOR_MAC, "dev", "eth0", "nud", "permanent");
    const req = await readPodRequests(pod.pod.name);
    const shape = `${req.interfaces.length} NIC, ${req.routes.length} routes, ${req.neighbors.length} neighbour`;
    if (req.interfaces.length !== 1 || req.routes.length !== 3 || req.neighbors.length !== 1) {
      throw new Error(`unexpected pod shape: ${shape}`);
    }
    const name = req.interfaces[0]?.name as string;
    guest = await Guest.create(await pod.mac(), GUEST_IF);
    const ns = guest.ns;
    client = await AgentClient.connect(guest.addr);
    const c = client;
    const batch = floorBatch(req);

    // Back to the starting state: gst0 up with only its own link-local address.
    const reset = async () => {
      const links = await ns.json<{ ifname: string }[]>("link", "show");
      const cur = links.some((l) => l.ifname === name) ? name : GUEST_IF;
      await ns.ip("neigh", "flush", "dev", cur, "nud", "permanent");
      await ns.ip("route", "flush", "dev", cur);
      await ns.ip("addr", "flush", "dev", cur);
      await ns.ip("link", "set", "dev", cur, "down");
      if (cur !== GUEST_IF) await ns.ip("link", "set", "dev", cur, "name", GUEST_IF);
      await ns.ip("link", "set", "dev", GUEST_IF, "up");
    };
    const check = async (what: string) => {
      const routes = await ns.json<{ dst: string }[]>("route", "show", "dev", name);
      const neigh = await ns.json<unknown[]>("neigh", "show", "nud", "permanent");
      if (routes.length < 3 || neigh.length !== 1) {
        throw new Error(`${what}: guest has ${routes.length} routes, ${neigh.length} neighbours`);
      }
    };
    const runA = async (verify: boolean) => {
      await reset();
      const t0 = performance.now();
      await syncAgent(c, req, { timeoutMs: 30_000 });
      a.push(performance.now() - t0);
      if (verify) await check("sync");
    };
    const runB = async (verify: boolean) => {
      await reset();
      b.push((await timeIp(["-n", ns.name, "-batch", "-"], batch)).ms);
      if (verify) await check("ip -batch");
    };
    const a: number[] = [];
    const b: number[] = [];
    // Warm-up of both (JIT, page cache), not counted.
    await runA(true);
    await runB(true);
    a.length = 0;
    b.length = 0;
    await interleave(pairs, runA, runB);
    const ratios = a.map((x, i) => x / (b[i] as number));
    return [
      {
        id: "8",
        what: `typical pod sync (CNI ptp: ${shape}), first request -> last answer`,
        unit: "ms",
        ours: median(a),
        reference: median(b),
        referenceWhat: "one ip -batch",
        ratio: median(ratios),
        ratioNote: "median of per-pair ratios",
        oursStats: summarize(a),
        referenceStats: summarize(b),
        ratioStats: summarize(ratios),
        goal: "ratio <= 2",
        met: median(ratios) <= 2,
        notes: [
          "ours: Check, UpdateInterface, UpdateRoutes, AddARPNeighbors over one unix connection (src/host/drive-agent.ts)",
        ],
        commands: [
          `bun bench/run.ts --rows 8 --pairs ${pairs}`,
          "by hand: a ptp pod (see test/host/helpers.ts PtpPod), then time dist/netagentctl sync --netns POD --addr unix:///tmp/nb.sock",
        ],
      },
    ];
  } finally {
    client?.close();
    await guest?.remove().catch(() => {});
    await pod.remove().catch(() => {});
  }
}
