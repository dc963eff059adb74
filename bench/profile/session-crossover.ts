/**
 * Where the resident ip session stops paying: reading a route table of N
 * routes through the session's pipe against a one-shot `ip` writing to a
 * file, wall time and this process's CPU, interleaved. iproute2 flushes its
 * JSON every route, and each flush reaches the event loop on its own
 * through a pipe; a process start costs a fixed few ms. The agent sends
 * tables over SESSION_MAX_ROUTES one-shot (src/net/iproute/ip-dispatch.ts).
 *
 *   bun bench/profile/session-crossover.ts [--pairs 21] [--counts 0,64,256,512,1024,2048]
 */
import { chmodSync, writeFileSync } from "node:fs";
import { IpSession } from "../../src/net/iproute/ip-session";
import { tempDir } from "../../test/helpers/tmp";
import { createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const pairs = Number(opt("--pairs", "21"));
const counts = opt("--counts", "0,64,256,512,1024,2048").split(",").map(Number);

const ns = await createBenchNetns();
const dir = tempDir("netagent-crossover-");
const ipIn = dir.join("ip-in-ns");
writeFileSync(ipIn, `#!/bin/sh\nexec ip -n '${ns.name}' "$@"\n`);
chmodSync(ipIn, 0o755);
const session = new IpSession(ipIn);
try {
  let n = 0;
  const oneShot = async () => {
    const out = dir.join(`${n++}.out`);
    const p = Bun.spawn([ipIn, "-json", "-details", "-batch", "-"], {
      stdin: Buffer.from("route show table all\n"),
      stdout: Bun.file(out),
      stderr: "pipe",
    });
    await p.exited;
    return (await Bun.file(out).text()).length;
  };
  const viaSession = async () => {
    const r = await session.exchange(["route show table all"], 1, { timeoutMs: 60_000 });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.length;
  };
  const measure = async (f: () => Promise<number>, wall: number[], cpu: number[]) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await f();
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  };
  console.log("| routes | one-shot wall ms | one-shot CPU ms | session wall ms | session CPU ms |");
  console.log("|---|---|---|---|---|");
  for (const count of counts) {
    await resetRoutes(ns);
    if (count > 0) {
      const lines = Array.from(
        { length: count },
        (_, i) => `route add 10.${1 + (i >> 8)}.${i & 255}.0/24 via 10.0.0.1 dev eth0`,
      );
      const r = await session.exchange([...lines, "route show"], 1, { timeoutMs: 60_000 });
      if (r.exitCode !== 0) throw new Error(r.stderr);
    }
    const wa: number[] = [];
    const ca: number[] = [];
    const wb: number[] = [];
    const cb: number[] = [];
    for (let i = 0; i < pairs; i++) {
      if (i % 2 === 0) {
        await measure(oneShot, wa, ca);
        await measure(viaSession, wb, cb);
      } else {
        await measure(viaSession, wb, cb);
        await measure(oneShot, wa, ca);
      }
    }
    const f = (x: number[]) => median(x).toFixed(2);
    console.log(`| ${count} | ${f(wa)} | ${f(ca)} | ${f(wb)} | ${f(cb)} |`);
  }
} finally {
  session.close();
  dir.remove();
  await ns.remove();
}
