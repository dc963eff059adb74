/**
 * The soak run, at any length: dist/netagent in a fresh netns takes `checks`
 * Check calls (8 connections, 64 in flight each) while `updates`
 * UpdateRoutes calls alternate between two tables on another connection.
 * Every call must succeed, the final table must be exactly the last one
 * requested (read with `ip -n NS -json`), and VmRSS is sampled once a second
 * for its slope over the second half of the run.
 */
import { writeFileSync } from "node:fs";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService, type UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import type { Route } from "../../src/gen/types_pb";
import { startHardenedAgent } from "../hardening/agent";
import { type RawConn, rawConnect, requestFrame, vmRssKiB } from "../hardening/raw";
import { Netns } from "../helpers/netns";
import { routeTable } from "../netns/tables";

type RouteInit = Partial<Omit<Route, "$typeName">>;

export interface SoakResult {
  checks: number;
  updates: number;
  seconds: number;
  rssStartKiB: number;
  rssEndKiB: number;
  /** Least-squares slope of VmRSS over the second half, KiB per minute. */
  slopeKiBPerMin: number;
  /** Lowest and highest VmRSS in the second half. */
  secondHalfMinKiB: number;
  secondHalfMaxKiB: number;
  samples: number;
}

/** Two tables the updates alternate between: different gateways, MTUs and a v6 route. */
const TABLES: RouteInit[][] = [0, 1].map((t) => [
  { gateway: "10.1.1.1", device: "eth0" },
  // The PTP shape: the subnet via the gateway, the gateway itself on-link.
  { dest: "10.1.1.0/24", gateway: "10.1.1.1", source: "10.1.1.2", device: "eth0" },
  { dest: "10.1.1.1/32", source: "10.1.1.2", device: "eth0", scope: 253 },
  ...Array.from({ length: 20 }, (_, i) => ({
    dest: `172.${16 + t}.${i}.0/24`,
    gateway: t === 0 ? "10.1.1.1" : "192.0.2.1",
    device: t === 0 ? "eth0" : "eth1",
    ...(i % 5 === 0 ? { mtu: 1400 - t * 100 } : {}),
  })),
  { dest: `fd00:${t + 9}::/64`, gateway: "fd00:1::1", device: "eth0", family: 1 },
]);

/** Least-squares slope of y over x. */
function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** How far the UpdateRoutes loop has got, so the Checks spread over the whole run. */
class Progress {
  done = 0;
  private waiters: (() => void)[] = [];
  constructor(readonly total: number) {}
  step(): void {
    this.done++;
    this.wakeAll();
  }
  finish(): void {
    this.done = this.total;
    this.wakeAll();
  }
  private wakeAll(): void {
    for (const w of this.waiters.splice(0)) w();
  }
  /** Resolves once the updates are at least `fraction` of the way. */
  async reach(fraction: number): Promise<void> {
    while (this.done < this.total && this.done / this.total < fraction) {
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
}

async function checkWorker(
  c: RawConn,
  count: number,
  inFlight: number,
  pace: Progress,
): Promise<number> {
  let id = 1;
  let done = 0;
  while (done < count) {
    await pace.reach(done / count - 0.01);
    const batch = Math.min(inFlight, count - done);
    const ids = Array.from({ length: batch }, (_, k) => id + 2 * k);
    id += 2 * batch;
    c.write(Buffer.concat(ids.map((i) => requestFrame(i, "grpc.Health", "Check"))));
    const answers = await Promise.all(ids.map((i) => c.answer(i, 60_000)));
    for (const a of answers) {
      if ((a.response?.status?.code ?? 0) !== 0)
        throw new Error(`Check failed: ${JSON.stringify(a.response)}`);
    }
    // Answers are kept by the raw connection for lookup: drop them as we go.
    c.answers.length = 0;
    done += batch;
  }
  return done;
}

export async function soak(opts: {
  checks: number;
  updates: number;
  /** Where to write the VmRSS samples ([minutes, KiB]) as JSON. */
  samplesFile?: string;
}): Promise<SoakResult> {
  const ns = await Netns.create("nt-soak");
  try {
    await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0c:01" });
    await ns.veth("eth1", "peer1", { mac: "02:00:00:00:0c:02" });
    await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
    await ns.ip("addr", "add", "192.0.2.2/24", "dev", "eth1");
    await ns.ip("addr", "add", "fd00:1::2/64", "dev", "eth0", "nodad");
    const agent = await startHardenedAgent({ netns: ns, args: ["--log-level", "warn"] });
    try {
      const pid = agent.child.pid;
      const started = performance.now();
      const rssStartKiB = vmRssKiB(pid);
      const samples: [number, number][] = [];
      const sampler = setInterval(() => {
        samples.push([(performance.now() - started) / 60_000, vmRssKiB(pid)]);
      }, 1000);
      try {
        const client = await AgentClient.connect(`unix://${agent.socket}`);
        const pace = new Progress(opts.updates);
        const updates = (async () => {
          for (let i = 0; i < opts.updates; i++, pace.step()) {
            const req: MessageInitShape<typeof UpdateRoutesRequestSchema> = {
              routes: { Routes: TABLES[i % 2] as RouteInit[] },
            };
            await client.unary(AgentService.method.updateRoutes, req, { timeoutMs: 30_000 });
          }
        })().finally(() => pace.finish());
        const perConn = Math.ceil(opts.checks / 8);
        const conns = await Promise.all(Array.from({ length: 8 }, () => rawConnect(agent.socket)));
        const checks = await Promise.all(
          conns.map((c, k) =>
            checkWorker(c, Math.min(perConn, opts.checks - k * perConn), 64, pace),
          ),
        );
        await updates;
        for (const c of conns) c.destroy();

        // The last table asked for, exactly, as ip reads it: every requested
        // gateway route present and no other; the host route on-link; and one
        // more identical call changes nothing (byte-identical ip -json).
        const last = TABLES[(opts.updates - 1) % 2] as RouteInit[];
        const table = await routeTable(ns);
        const dump = await ns.routeDump();
        await client.unary(AgentService.method.updateRoutes, { routes: { Routes: last } });
        expect(await ns.routeDump()).toBe(dump);
        const gateways = last.filter((r) => r.gateway);
        const via = table.filter((l) => l.includes(" via "));
        expect(via).toHaveLength(gateways.length);
        for (const r of gateways) {
          const want = ` ${r.dest || "default"} via ${r.gateway} dev ${r.device} `;
          expect(
            via.some((l) => `${l} `.includes(want)),
            want,
          ).toBe(true);
        }
        expect(table).toContain("v4 10.1.1.1 dev eth0 src 10.1.1.2 scope link metric 0");
        client.close();
        expect(checks.reduce((a, b) => a + b, 0)).toBe(opts.checks);
      } finally {
        clearInterval(sampler);
      }
      expect(agent.child.running).toBe(true);
      const seconds = (performance.now() - started) / 1000;
      const end = samples.at(-1)?.[0] ?? 0;
      const half = samples.filter(([t]) => t >= end / 2);
      const result: SoakResult = {
        checks: opts.checks,
        updates: opts.updates,
        seconds: Math.round(seconds),
        rssStartKiB,
        rssEndKiB: vmRssKiB(pid),
        slopeKiBPerMin: Math.round(slope(half) * 10) / 10,
        secondHalfMinKiB: Math.min(...half.map(([, y]) => y)),
        secondHalfMaxKiB: Math.max(...half.map(([, y]) => y)),
        samples: samples.length,
      };
      if (opts.samplesFile) writeFileSync(opts.samplesFile, JSON.stringify({ result, samples }));
      return result;
    } finally {
      await agent.stop();
    }
  } finally {
    await ns.remove();
  }
}
