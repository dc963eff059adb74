/**
 * Row 8: a typical pod's whole sync, the shim's start-up path. A real CNI
 * ptp pod (host-local IPAM: 1 NIC, 3 routes) plus one permanent neighbour
 * is read once into requests; each run then sends them to a fresh-state
 * guest netns the way the runtime does (Check, UpdateInterface,
 * UpdateRoutes, AddARPNeighbors), timed from the first request to the last
 * answer. The floor makes the same changes with one `ip -n GUEST -batch -`.
 * The guest is put back to the same starting state (link `gst0` up, no
 * addresses, routes or neighbours) before each run: row 8 puts the link's
 * name back through the agent itself (UpdateInterface, untimed), as in a
 * guest where nobody else renames links; row 8r renames it with another
 * `ip`, so the agent's resident ip must be replaced (ip-name-cache.ts) and
 * each sync pays a process start. Runs rotate A B C / B C A / C A B.
 */

import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import type { SyncRequests } from "../../src/host/pod/pod-requests";
import { syncAgent } from "../../src/host/sync/drive-agent";
import { Guest } from "../../test/host/helpers";
import { ptpSync } from "../lib/ptp-pod";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";
import { timeIp } from "./update-routes";

const GUEST_IF = "gst0";

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
  const { pod, req } = await ptpSync();
  let guest: Guest | undefined;
  let client: AgentClient | undefined;
  try {
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

    // Back to the starting state: gst0 up with only its own link-local
    // address; the name put back by the agent (`viaAgent`) or by ip.
    const reset = async (viaAgent: boolean) => {
      const links = await ns.json<{ ifname: string }[]>("link", "show");
      const cur = links.some((l) => l.ifname === name) ? name : GUEST_IF;
      await ns.ip("neigh", "flush", "dev", cur, "nud", "permanent");
      await ns.ip("route", "flush", "dev", cur);
      await ns.ip("addr", "flush", "dev", cur);
      if (cur === GUEST_IF) return;
      if (viaAgent) {
        const { hwAddr, mtu } = req.interfaces[0] as (typeof req.interfaces)[0];
        const back = { hwAddr, mtu, name: GUEST_IF };
        await c.unary(AgentService.method.updateInterface, { interface: back });
        return;
      }
      await ns.ip("link", "set", "dev", cur, "down");
      await ns.ip("link", "set", "dev", cur, "name", GUEST_IF);
      await ns.ip("link", "set", "dev", GUEST_IF, "up");
    };
    const check = async (what: string) => {
      const routes = await ns.json<{ dst: string }[]>("route", "show", "dev", name);
      const neigh = await ns.json<unknown[]>("neigh", "show", "nud", "permanent");
      if (routes.length < 3 || neigh.length !== 1) {
        throw new Error(`${what}: guest has ${routes.length} routes, ${neigh.length} neighbours`);
      }
    };
    const a: number[] = [];
    const b: number[] = [];
    const r: number[] = [];
    const sync = (viaAgent: boolean, into: number[]) => async (verify: boolean) => {
      await reset(viaAgent);
      const t0 = performance.now();
      await syncAgent(c, req, { timeoutMs: 30_000 });
      into.push(performance.now() - t0);
      if (verify) await check("sync");
    };
    const runA = sync(true, a);
    const runR = sync(false, r);
    const runB = async (verify: boolean) => {
      await reset(false);
      b.push((await timeIp(["-n", ns.name, "-batch", "-"], batch)).ms);
      if (verify) await check("ip -batch");
    };
    // Warm-up of each (JIT, page cache), not counted.
    for (const run of [runA, runB, runR]) await run(true);
    a.length = 0;
    b.length = 0;
    r.length = 0;
    const order = [runA, runB, runR];
    for (let i = 0; i < pairs; i++) {
      for (let k = 0; k < 3; k++) await (order[(i + k) % 3] as typeof runA)(false);
    }
    const row = (id: string, ours: number[], how: string): Row => {
      const ratios = ours.map((x, i) => x / (b[i] as number));
      return {
        id,
        what: `typical pod sync (CNI ptp: ${shape}), first request -> last answer; ${how}`,
        unit: "ms",
        ours: median(ours),
        reference: median(b),
        referenceWhat: "one ip -batch",
        ratio: median(ratios),
        ratioNote: "median of per-run ratios (runs rotate A B C)",
        oursStats: summarize(ours),
        referenceStats: summarize(b),
        ratioStats: summarize(ratios),
        goal: "ratio <= 2",
        met: median(ratios) <= 2,
        notes: [
          "ours: Check, UpdateInterface, UpdateRoutes, AddARPNeighbors over one unix connection (src/host/sync/drive-agent.ts)",
        ],
        commands: [
          `bun bench/run.ts --rows 8 --pairs ${pairs}`,
          "by hand: a ptp pod (see test/host/helpers.ts PtpPod), then time dist/netagentctl sync --netns POD --addr unix:///tmp/nb.sock",
        ],
      };
    };
    return [
      row("8", a, "link renamed back by the agent between runs"),
      row("8r", r, "link renamed back by another ip (the agent's ip replaced each run)"),
    ];
  } finally {
    client?.close();
    await guest?.remove().catch(() => {});
    await pod.remove().catch(() => {});
  }
}
