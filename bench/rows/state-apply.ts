/**
 * Row 10: the whole state of a typical pod in one netagent.v1 Apply. A
 * real CNI ptp + tuning + sbr pod (1 NIC at MTU 1400, a rule, 3 routes in
 * table 100, an empty main table, rp_filter 2 and arp_ignore 1) is read
 * once; each run Applies it (exact) to a guest netns put back to the same
 * starting state, timed from the request to the answer (read, plan, one
 * ip -batch, sysctl writes, read back, check). The floor makes the same
 * changes by hand: the plan's own batch lines through one
 * `ip -n GUEST -batch -`, then one `sysctl -w` process in the guest netns
 * for the sysctl writes. Runs alternate A B / B A.
 */

import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { readFreshDefaults, readPodFullState } from "../../src/host/pod/pod-state";
import { applyRequestFor } from "../../src/host/sync/drive-state";
import type { Netns } from "../../test/helpers/netns";
import { addVeth, Guest } from "../../test/host/helpers";
import { ChainPod, ptpTuningSbr, rules, sysctl, tableText } from "../../test/host/state-helpers";
import { applyPairs } from "../lib/apply-pairs";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";
import { timeIp } from "./update-routes";

export const GUEST_IF = "gst0";

async function timeSysctl(ns: string, writes: readonly string[]): Promise<number> {
  const t0 = performance.now();
  const proc = Bun.spawn(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", ...writes], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`sysctl -w in ${ns}: ${err}`);
  return performance.now() - t0;
}

/** Puts a guest netns back to the state row 10's Apply starts from (its NIC `gst0`, nothing else). */
export async function resetGuest(ns: Netns): Promise<void> {
  const links = await ns.json<{ ifname: string }[]>("link", "show");
  const cur = links.some((l) => l.ifname === "eth0") ? "eth0" : GUEST_IF;
  await ns.ip("addr", "flush", "dev", cur);
  await ns.ip("route", "flush", "table", "100").catch(() => "");
  await ns.ip("-6", "route", "flush", "table", "100").catch(() => "");
  await ns.ip("rule", "del", "priority", "32765").catch(() => "");
  await ns.ip("link", "set", "dev", cur, "down");
  if (cur !== GUEST_IF) await ns.ip("link", "set", "dev", cur, "name", GUEST_IF);
  await ns.ip("link", "set", "dev", GUEST_IF, "mtu", "1500");
  await ns.ip("link", "set", "dev", GUEST_IF, "up");
  await timeSysctl(ns.name, [
    `net.ipv4.conf.${GUEST_IF}.rp_filter=0`,
    `net.ipv4.conf.${GUEST_IF}.arp_ignore=0`,
  ]);
}

/** Throws naming `what` unless the guest holds the pod's state (independent reads). */
export async function checkGuest(ns: Netns, what: string): Promise<void> {
  const t100 = await tableText(ns, "100");
  const rule = (await rules(ns)).some((l) => l.includes('"table":"100"'));
  const rp = await sysctl(ns, "net.ipv4.conf.eth0.rp_filter");
  if (t100.length !== 3 || !rule || rp !== "2") {
    throw new Error(`${what}: table 100 ${t100.length} routes, rule ${rule}, rp_filter ${rp}`);
  }
}

export async function stateApplyRows(pairs: number): Promise<Row[]> {
  const pod = await ChainPod.create();
  let guest: Guest | undefined;
  let client: AgentClient | undefined;
  try {
    await pod.attach(ptpTuningSbr());
    guest = await Guest.create();
    const ns = guest.ns;
    await addVeth(ns, GUEST_IF, await pod.mac());
    client = await AgentClient.connect(guest.addr);
    const c = client;
    const reset = () => resetGuest(ns);
    const check = (what: string) => checkGuest(ns, what);
    await reset();
    const full = await readPodFullState(pod.pod.name);
    const guestState = await c.unary(Network.method.get, {});
    const { request } = applyRequestFor(full, guestState, await readFreshDefaults());
    // The floor's lines: the plan for the state each run starts from (not timed).
    const floorPlan = async () => {
      const dry = await c.unary(Network.method.apply, { ...request, dryRun: true });
      if (dry.plan.some((l) => l.startsWith("-6 ")))
        throw new Error("plan needs ip -6: not this pod");
      return {
        batch: dry.plan.filter((l) => !l.startsWith("sysctl ")),
        writes: dry.plan.filter((l) => l.startsWith("sysctl ")).map((l) => l.slice(7)),
      };
    };
    const first = await floorPlan();
    const shape = `${first.batch.length} batch lines + ${first.writes.length} sysctl writes`;

    const { a, b, ratios } = await applyPairs({
      pairs,
      reset,
      apply: () => c.unary(Network.method.apply, request, { timeoutMs: 30_000 }),
      floor: async () => {
        const { batch, writes } = await floorPlan();
        const ipMs = (await timeIp(["-n", ns.name, "-batch", "-"], `${batch.join("\n")}\n`)).ms;
        return ipMs + (await timeSysctl(ns.name, writes));
      },
      check,
      floorWhat: "ip -batch + sysctl -w",
    });
    return [
      {
        id: "10",
        what: `whole-state Apply of the ptp+tuning+sbr pod (${shape}), request -> answer`,
        unit: "ms",
        ours: median(a),
        reference: median(b),
        referenceWhat: "one ip -batch + one sysctl -w",
        ratio: median(ratios),
        ratioNote: "median of per-pair ratios",
        oursStats: summarize(a),
        referenceStats: summarize(b),
        ratioStats: summarize(ratios),
        goal: "ratio <= 2",
        met: median(ratios) <= 2,
        notes: [
          "ours: netagent.v1.Network/Apply (exact) over one unix connection: read links/routes/rules (2 ip), plan, 1 ip -batch, sysctl writes, read back (2 ip) and re-plan",
          "reference: the same plan's batch lines and writes, no reads",
        ],
        commands: [
          `bun bench/run.ts --rows 10 --pairs ${pairs}`,
          "by hand: the pod of test/host/state-helpers.ts ptpTuningSbr(), then time dist/netagentctl sync --netns POD --addr unix:///tmp/nb.sock",
        ],
      },
    ];
  } finally {
    client?.close();
    await guest?.remove().catch(() => {});
    await pod.remove().catch(() => {});
  }
}
