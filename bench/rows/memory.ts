/**
 * Row 6: the agent's memory (VmRSS from /proc/PID/status). Idle after the
 * first Check and 2 s of quiet, against the runtime floor's; peak (VmHWM,
 * reset with clear_refs 5 before each phase) during 100,000 Check calls
 * and during a 10,000-route UpdateRoutes; RSS sampled after every 10,000
 * calls and its slope fitted from 10,000 calls on.
 */
import { AgentClient } from "../../src/client/client";
import type { RunningAgent } from "../../test/helpers/agent";
import { createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { hwmKiB, resetPeak, rssKiB, statusKiB } from "../lib/proc";
import { updateRoutesPayload } from "../lib/route-set";
import type { Row } from "../lib/row";
import { median, slope, summarize } from "../lib/stats";

export interface MemoryOptions {
  /** Check calls whose peak RSS is reported (100,000 by default). */
  calls: number;
  /** Calls kept going for the slope: GC cycles are ~15 MiB and ~100,000 calls apart here. */
  slopeCalls: number;
  concurrency: number;
  routes: number;
  /** The floor's idle RSS samples (KiB), from the cold-start row. */
  floorIdleKiB: number[];
  /** The floor's RssAnon/RssFile split, as text. */
  floorSplit: string;
}

const CHECK_PAYLOAD = new Uint8Array(0);
const MiB = (kib: number) => kib / 1024;

/**
 * Check calls in steps of `step` at the options' concurrency, up to the
 * larger of `calls` and `slopeCalls`: the RSS after each step, and the
 * peak once `calls` are done.
 */
async function checkCalls(
  c: AgentClient,
  pid: Parameters<typeof rssKiB>[0],
  o: MemoryOptions,
  step: number,
): Promise<{ samples: { calls: number; kib: number }[]; checkPeak: number; total: number }> {
  const samples: { calls: number; kib: number }[] = [];
  resetPeak(pid);
  let done = 0;
  let checkPeak = 0;
  const total = Math.max(o.calls, o.slopeCalls);
  while (done < total) {
    const target = Math.min(done + step, total);
    let next = done;
    const worker = async () => {
      while (next < target) {
        next++;
        await c.raw("grpc.Health", "Check", CHECK_PAYLOAD);
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    done = target;
    samples.push({ calls: done, kib: rssKiB(pid) });
    if (done === o.calls) checkPeak = hwmKiB(pid);
  }
  return { samples, checkPeak, total };
}

export async function memoryRows(o: MemoryOptions): Promise<Row[]> {
  const ns = await createBenchNetns();
  let agent: RunningAgent | undefined;
  let client: AgentClient | undefined;
  try {
    agent = await ns.startAgent(["--log-level", "warn"]);
    const pid = agent.child.pid;
    client = await AgentClient.connect(`unix://${agent.socket}`);
    const c = client;
    await c.raw("grpc.Health", "Check", CHECK_PAYLOAD);
    await Bun.sleep(2000);
    const idle = rssKiB(pid);
    const idleSplit = `netagent RssAnon ${MiB(statusKiB(pid, "RssAnon")).toFixed(1)} MiB, RssFile ${MiB(statusKiB(pid, "RssFile")).toFixed(1)} MiB`;

    const step = 10_000;
    const { samples, checkPeak, total } = await checkCalls(c, pid, o, step);
    const after = samples.filter((s) => s.calls >= step);
    // KiB per 10,000 calls, from 10,000 calls on.
    const perStep = slope(
      after.map((s) => s.calls / step),
      after.map((s) => s.kib),
    );

    await resetRoutes(ns);
    const payload = updateRoutesPayload(o.routes);
    resetPeak(pid);
    await c.raw("grpc.AgentService", "UpdateRoutes", payload, { timeoutMs: 300_000 });
    const routesPeak = hwmKiB(pid);
    const afterRoutes = rssKiB(pid);
    await resetRoutes(ns);

    const floorIdle = median(o.floorIdleKiB);
    const cmd = "bun bench/run.ts --rows 6";
    const growth = (perStep * (after.length - 1)) / 1024;
    // The RSS is a GC sawtooth (~15 MiB deep here), so a fitted line over a
    // few cycles mostly reflects where the cycles start and end; compare the
    // upper envelope of the first and last thirds instead.
    const third = Math.floor(after.length / 3);
    const peakOf = (xs: { kib: number }[]) => Math.max(...xs.map((x) => x.kib));
    const envelopeRise =
      third > 0 ? (peakOf(after.slice(-third)) - peakOf(after.slice(0, third))) / 1024 : Number.NaN;
    const half = samples.filter((x) => x.calls >= total / 2);
    const halfGrowth =
      (slope(
        half.map((x) => x.calls / step),
        half.map((x) => x.kib),
      ) *
        (half.length - 1)) /
      1024;
    return [
      {
        id: "6",
        what: "idle RSS after the first Check + 2 s",
        unit: "MiB",
        ours: MiB(idle),
        reference: MiB(floorIdle),
        referenceWhat: "Bun floor, same wait",
        ratio: idle / floorIdle,
        referenceStats: summarize(o.floorIdleKiB.map(MiB)),
        goal: "<= 32 MiB",
        met: MiB(idle) <= 32,
        notes: [idleSplit, o.floorSplit].filter(Boolean),
        commands: [cmd, "by hand: grep VmRSS /proc/$(pidof netagent)/status"],
      },
      {
        id: "6",
        what: `peak RSS during ${o.calls.toLocaleString("en")} Check calls (TS client, concurrency ${o.concurrency})`,
        unit: "MiB",
        ours: MiB(checkPeak),
        oursStats: summarize(samples.filter((s) => s.calls <= o.calls).map((s) => MiB(s.kib))),
        notes: [
          `RSS after each 10,000 calls (MiB): ${samples.map((s) => MiB(s.kib).toFixed(1)).join(", ")}`,
        ],
        commands: [
          cmd,
          "by hand: echo 5 > /proc/PID/clear_refs; (calls); grep VmHWM /proc/PID/status",
        ],
      },
      {
        id: "6",
        what: `RSS slope across ${total.toLocaleString("en")} Check calls, from 10,000 calls on`,
        unit: "KiB/10k calls",
        ours: perStep,
        goal: "no growth after 10,000 calls: the RSS peaks of the last third no higher than those of the first (+1 MiB)",
        met: envelopeRise < 1,
        notes: [
          `peak of the last third minus peak of the first third (from 10,000 calls): ${envelopeRise.toFixed(2)} MiB`,
          `fitted growth over the last ${(total - step).toLocaleString("en")} calls: ${growth.toFixed(2)} MiB`,
          `fitted growth over the second half (${(total / 2).toLocaleString("en")} calls on): ${halfGrowth.toFixed(2)} MiB`,
        ],
        commands: [cmd],
      },
      {
        id: "6",
        what: `peak RSS during one ${o.routes.toLocaleString("en")}-route UpdateRoutes`,
        unit: "MiB",
        ours: MiB(routesPeak),
        notes: [`RSS right after: ${MiB(afterRoutes).toFixed(1)} MiB`],
        commands: [cmd],
      },
    ];
  } finally {
    client?.close();
    await agent?.stop().catch(() => {});
    await ns.remove();
  }
}
