/**
 * The server's per-call CPU cost, in-process and without a socket: Check
 * requests fed to a ServerConnection in bursts of --burst (as a client at
 * that concurrency would), answers swallowed. Prints calls/s over --runs
 * runs; run under `bun --cpu-prof-md` to see where the time goes.
 *
 *   bun bench/profile/server-calls.ts [--calls 200000] [--burst 16] [--runs 5]
 */

import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { healthService } from "../../src/agent/services/health-service";
import { Health } from "../../src/gen/health_pb";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { CHECK_FRAME } from "../lib/proc";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d: number) => {
  const i = argv.indexOf(k);
  return i >= 0 ? Number(argv[i + 1]) : d;
};
const calls = opt("--calls", 200_000);
const burst = opt("--burst", 16);
const runs = opt("--runs", 5);

/** `n` Check frames on streams first, first+2, ... in one buffer. */
function frames(first: number, n: number): Uint8Array {
  const out = new Uint8Array(CHECK_FRAME.length * n);
  for (let i = 0; i < n; i++) {
    out.set(CHECK_FRAME, i * CHECK_FRAME.length);
    new DataView(out.buffer).setUint32(i * CHECK_FRAME.length + 4, first + 2 * i);
  }
  return out;
}

const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS).register(Health, healthService);
const rates: number[] = [];
for (let r = 0; r < runs; r++) {
  let answered = 0;
  let wake: (() => void) | undefined;
  const conn = new ServerConnection({
    registry,
    write: () => {
      answered++;
      if (answered % burst === 0) wake?.();
    },
  });
  const t0 = performance.now();
  for (let sent = 0; sent < calls; sent += burst) {
    const done = new Promise<void>((resolve) => {
      wake = resolve;
    });
    conn.receive(frames(1 + 2 * sent, burst));
    await done;
  }
  rates.push(calls / ((performance.now() - t0) / 1000));
}
console.log(
  `server-calls: ${calls} Checks in bursts of ${burst}: median ${median(rates).toFixed(0)} calls/s (${rates.map((x) => x.toFixed(0)).join(", ")})`,
);
