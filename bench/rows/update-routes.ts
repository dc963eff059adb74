/**
 * Rows 3 and 4: UpdateRoutes end to end through the agent's socket, the
 * agent inside a fresh netns, against iproute2 doing the same work directly.
 *
 * Row 3: N routes into a table holding none of them (reset before every
 * run) vs `ip -n NS -batch -` of the very lines the agent writes.
 * Row 4: the same request again (nothing to change) vs one
 * `ip -n NS -json route show` of that table.
 * Row 3 (first call): N routes as the first call of an agent started for
 * it (nothing compiled yet, the way a sandbox's agent meets its first
 * request) vs the same `ip -batch`.
 * Runs alternate A B / B A; the medians of the pairs are reported.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { AgentClient } from "../../src/client/client";
import { RoutesSchema } from "../../src/gen/agent_pb";
import type { RunningAgent } from "../../test/helpers/agent";
import type { Netns } from "../../test/helpers/netns";
import { countRoutes, createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { interleave } from "../lib/interleave";
import { batchText, updateRoutesPayload } from "../lib/route-set";
import type { Row } from "../lib/row";
import { fitExponent, median, summarize } from "../lib/stats";

export interface UpdateRoutesOptions {
  counts: number[];
  /** Pairs per count; counts >= 50,000 get `bigPairs`. */
  pairs: number;
  bigPairs: number;
  /** Counts at which row 4 (the no-change call) is measured. */
  noChangeCounts: number[];
  /** Counts at which row 3 is also measured as a fresh agent's first call. */
  firstCallCounts?: number[];
  noChangePairs: number;
}

const CALL_TIMEOUT_MS = 300_000;

/** Spawns `ip` like the agent's IpRunner does (Bun.spawn, piped stdio); returns ms and stdout. */
export async function timeIp(
  args: string[],
  stdin?: string,
): Promise<{ ms: number; stdout: string }> {
  const t0 = performance.now();
  const proc = Bun.spawn(["ip", ...args], {
    stdin: stdin === undefined ? "ignore" : Buffer.from(stdin),
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`ip ${args.join(" ")}: exit ${code}: ${stderr}`);
  return { ms, stdout };
}

export async function updateRoutesRows(o: UpdateRoutesOptions): Promise<Row[]> {
  const ns = await createBenchNetns();
  let agent: RunningAgent | undefined;
  let client: AgentClient | undefined;
  try {
    agent = await ns.startAgent(["--log-level", "warn"]);
    client = await AgentClient.connect(`unix://${agent.socket}`);
    const c = client;
    const call = async (payload: Uint8Array) => {
      const t0 = performance.now();
      const reply = await c.raw("grpc.AgentService", "UpdateRoutes", payload, {
        timeoutMs: CALL_TIMEOUT_MS,
      });
      return { ms: performance.now() - t0, reply };
    };
    // Warm-up (JIT, page cache of ip), not counted.
    await call(updateRoutesPayload(100));
    await resetRoutes(ns);
    await timeIp(["-n", ns.name, "-batch", "-"], batchText(100));
    await resetRoutes(ns);

    const rows: Row[] = [];
    const points: { x: number; y: number }[] = [];
    const refPoints: { x: number; y: number }[] = [];
    for (const n of o.counts) {
      const payload = updateRoutesPayload(n);
      const text = batchText(n);
      const pairs = n >= 50_000 ? o.bigPairs : o.pairs;
      const a: number[] = [];
      const b: number[] = [];
      const runA = async (check: boolean) => {
        await resetRoutes(ns);
        const r = await call(payload);
        a.push(r.ms);
        if (check) {
          const got = fromBinary(RoutesSchema, r.reply).Routes.filter((x) => x.gateway).length;
          if (got !== n) throw new Error(`UpdateRoutes ${n}: reply has ${got} gateway routes`);
        }
      };
      const runB = async (check: boolean) => {
        await resetRoutes(ns);
        b.push((await timeIp(["-n", ns.name, "-batch", "-"], text)).ms);
        if (check && (await countRoutes(ns)) !== n + 1) throw new Error(`ip -batch ${n}: count`);
      };
      await interleave(pairs, runA, runB);
      const ratios = a.map((x, i) => x / (b[i] as number));
      const ours = median(a);
      if (n >= 1000) {
        points.push({ x: n, y: ours });
        refPoints.push({ x: n, y: median(b) });
      }
      rows.push({
        id: "3",
        what: `UpdateRoutes ${n.toLocaleString("en")} routes, end to end (empty table -> N)`,
        unit: "ms",
        ours,
        reference: median(b),
        referenceWhat: "ip -batch",
        ratio: median(ratios),
        ratioNote: "median of per-pair ratios ours/ip",
        oursStats: summarize(a),
        referenceStats: summarize(b),
        ratioStats: summarize(ratios),
        ...(n >= 1000 ? { goal: "ratio <= 1.3", met: median(ratios) <= 1.3 } : {}),
        ...(pairs < o.pairs ? { notes: [`${pairs} pairs at this size (time budget)`] } : {}),
        commands: [
          `bun bench/run.ts --rows 3 --counts ${n} --pairs ${pairs}`,
          n <= 1000
            ? `ours by hand (adds netagentctl's own start): time dist/netagentctl --addr unix:///tmp/nb.sock --timeout 300 call grpc.AgentService UpdateRoutes --data "$(bun bench/tools/routes.ts ${n} --json)" >/dev/null`
            : `ours: the request is bun bench/tools/routes.ts ${n} --json (too long for one argument: use the bench command)`,
          `floor: bun bench/tools/routes.ts ${n} --batch > /tmp/r.batch; time ip -n NS -batch - < /tmp/r.batch`,
        ],
      });
    }
    if (points.length >= 2) {
      const k = fitExponent(points);
      rows.push({
        id: "3",
        what: `UpdateRoutes time ~ N^k, k fitted (log-log least squares) over N = ${points.map((p) => p.x.toLocaleString("en")).join(", ")}`,
        unit: "exponent",
        ours: k,
        reference: fitExponent(refPoints),
        referenceWhat: "ip -batch's k",
        goal: "k <= 1.1",
        met: k <= 1.1,
        commands: ["bun bench/run.ts --rows 3"],
      });
    }

    rows.push(...(await firstCallRows(ns, o)));

    rows.push(...(await noChangeRows(ns, o, call)));
    return rows;
  } finally {
    client?.close();
    await agent?.stop().catch(() => {});
    await ns.remove();
  }
}

/** A fresh agent's first UpdateRoutes of each of `firstCallCounts` routes, beside ip -batch. */
async function firstCallRows(ns: Netns, o: UpdateRoutesOptions): Promise<Row[]> {
  const rows: Row[] = [];
  for (const n of o.firstCallCounts ?? []) {
    const payload = updateRoutesPayload(n);
    const text = batchText(n);
    const a: number[] = [];
    const b: number[] = [];
    const runA = async () => {
      await resetRoutes(ns);
      const fresh = await ns.startAgent(["--log-level", "warn"]);
      const fc = await AgentClient.connect(`unix://${fresh.socket}`);
      try {
        const t0 = performance.now();
        const reply = await fc.raw("grpc.AgentService", "UpdateRoutes", payload, {
          timeoutMs: CALL_TIMEOUT_MS,
        });
        a.push(performance.now() - t0);
        const got = fromBinary(RoutesSchema, reply).Routes.filter((x) => x.gateway).length;
        if (got !== n) throw new Error(`first call ${n}: reply has ${got} gateway routes`);
      } finally {
        fc.close();
        await fresh.stop().catch(() => {});
      }
    };
    const runB = async () => {
      await resetRoutes(ns);
      b.push((await timeIp(["-n", ns.name, "-batch", "-"], text)).ms);
    };
    await interleave(o.pairs, runA, runB);
    const ratios = a.map((x, i) => x / (b[i] as number));
    rows.push({
      id: "3",
      what: `UpdateRoutes ${n.toLocaleString("en")} routes, a fresh agent's first call (empty table -> N)`,
      unit: "ms",
      ours: median(a),
      reference: median(b),
      referenceWhat: "ip -batch",
      ratio: median(ratios),
      ratioNote: "median of per-pair ratios; the call only, not the agent's start",
      oursStats: summarize(a),
      referenceStats: summarize(b),
      ratioStats: summarize(ratios),
      goal: "ratio <= 1.5",
      met: median(ratios) <= 1.5,
      commands: [
        `bun bench/run.ts --rows 3 --counts ${n} --first-call-counts ${n} --pairs ${o.pairs}`,
        `floor: bun bench/tools/routes.ts ${n} --batch > /tmp/r.batch; time ip -n NS -batch - < /tmp/r.batch`,
      ],
    });
  }
  return rows;
}

/**
 * UpdateRoutes that changes nothing, for each of `noChangeCounts` routes:
 * a repeat of the call before, and the same routes in another order,
 * beside ip -json route show.
 */
async function noChangeRows(
  ns: Netns,
  o: UpdateRoutesOptions,
  call: (payload: Uint8Array) => Promise<{ ms: number; reply: Uint8Array }>,
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const n of o.noChangeCounts) {
    const payload = updateRoutesPayload(n);
    await resetRoutes(ns);
    await call(payload);
    // The same routes in the other order: no change either, but bytes the
    // agent's no-change memo (src/agent/services/routes-memo.ts) has not kept, so
    // each such call validates, parses, plans and encodes.
    const reordered = [updateRoutesPayload(n, { reversed: true }), payload];
    const a: number[] = [];
    const b: number[] = [];
    const c: number[] = [];
    const show = ["-n", ns.name, "-json", "route", "show"];
    const runA = async () => {
      // The repeat of a kept call: the call just before is the same request.
      await call(payload);
      a.push((await call(payload)).ms);
    };
    const runB = async () => b.push((await timeIp(show)).ms);
    let flip = 0;
    const runC = async () => c.push((await call(reordered[flip++ % 2] as Uint8Array)).ms);
    const order = [runA, runB, runC];
    for (let i = 0; i < o.noChangePairs; i++) {
      for (let k = 0; k < 3; k++) await (order[(i + k) % 3] as typeof runA)();
    }
    const noChangeRow = (id: string, ours: number[], what: string, goal: string): Row => {
      const ratios = ours.map((x, i) => x / (b[i] as number));
      return {
        id,
        what,
        unit: "ms",
        ours: median(ours),
        reference: median(b),
        referenceWhat: "ip -json route show",
        ratio: median(ratios),
        ratioNote: "median of per-run ratios (runs rotate A B C)",
        oursStats: summarize(ours),
        referenceStats: summarize(b),
        ratioStats: summarize(ratios),
        goal,
        met: median(ratios) <= 1.5,
        commands: [
          `bun bench/run.ts --rows 4 --no-change-counts ${n}`,
          `floor: time ip -n NS -json route show >/dev/null (with the ${n} routes in place)`,
        ],
      };
    };
    const count = n.toLocaleString("en");
    rows.push(
      noChangeRow(
        "4r",
        c,
        `UpdateRoutes, the same ${count} routes in another order than the call before (no change, not a repeat)`,
        "ratio <= 1.5 (the repeat's goal; this is the planning path beside it)",
      ),
      noChangeRow(
        "4",
        a,
        `UpdateRoutes again, same ${count} routes (no change; a repeat of the call before)`,
        "ratio <= 1.5",
      ),
    );
  }
  return rows;
}
