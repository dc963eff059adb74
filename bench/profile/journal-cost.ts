/**
 * What the change journal adds to a change that does not fail:
 * one record written (encode, one file created and written) and removed
 * (unlink), timed here alone for records of three sizes: a pod's sync
 * (row 8: a handful of routes), 3,000 routes, 100,000 routes (the whole
 * table, as an Apply's record holds it), and an UpdateRoutes' record of
 * only the routes its plan touches (route-undo.ts). Least and
 * median of `--rounds` write+clear pairs after a warm-up, in the state directory
 * given (default a directory under /run, tmpfs as in the guest). First the
 * goal's own yardstick: the pod's record bytes written to a new file and
 * unlinked, bare (no encode, no journal).
 *
 *   bun bench/profile/journal-cost.ts [--dir /run/netagent-bench] [--rounds 200] [--small]
 *
 * (--small: only the records of 10 routes or fewer, a pod's calls.)
 */
import { rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Change } from "../../src/agent/journal/change-record";
import { Journal } from "../../src/agent/journal/journal";
import { encodeRecord } from "../../src/agent/journal/record-file";
import { createLogger } from "../../src/common/log";
import type { Route } from "../../src/net/model/model";
import { flag, option } from "../lib/args";
import { median } from "../lib/stats";

const dir = option("--dir", "/run/netagent-bench");
const rounds = Number(option("--rounds", "200"));
const small = flag("--small");

const route = (i: number): Route => ({
  family: 4,
  table: 254,
  dst: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`,
  gateway: "10.0.0.1",
  dev: "eth0",
  scope: 0,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
});
const routes = (n: number): Change => ({
  kind: "routes",
  routes: Array.from({ length: n }, (_, i) => route(i)),
});

/** An UpdateRoutes' record: `n` routes replaced (old and new values), whatever the table's size. */
const touched = (n: number): Change => ({
  kind: "routes-touched",
  removed: Array.from({ length: n }, (_, i) => route(i)),
  added: Array.from({ length: n }, (_, i) => ({ ...route(i), gateway: "10.0.0.2" })),
});

rmSync(dir, { recursive: true, force: true });
const journal = Journal.open({
  dir,
  log: createLogger("error"),
  owner: { pid: process.pid, start: 0, pgid: process.pid },
  bootId: "bench",
  netns: "bench",
});
const text = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(0)} us` : `${ms.toFixed(1)} ms`);
{
  const bytes = encodeRecord(routes(4));
  const path = join(dir, "bare.rec");
  const times: number[] = [];
  for (let i = 0; i < rounds + 5; i++) {
    const t0 = performance.now();
    writeFileSync(path, bytes, { mode: 0o600, flag: "wx" });
    unlinkSync(path);
    if (i >= 5) times.push(performance.now() - t0);
  }
  console.log(
    `one small write and one unlink, bare (${(bytes.length / 1024).toFixed(1)} KiB): least ${text(Math.min(...times))}, median ${text(median(times))} (${rounds} rounds)`,
  );
}
for (const [what, change, n] of [
  ["a pod's sync (row 8: 4 routes)", routes(4), rounds],
  ["3,000 routes", routes(3000), rounds],
  ["10,000 routes (row 3)", routes(10_000), Math.max(5, Math.floor(rounds / 4))],
  ["100,000 routes", routes(100_000), Math.max(5, Math.floor(rounds / 20))],
  ["UpdateRoutes touching 10 routes (any table)", touched(10), rounds],
  ["UpdateRoutes touching 1,500 routes (3,000, half replaced)", touched(1500), rounds],
  ["UpdateRoutes touching 100,000 routes", touched(100_000), Math.max(5, Math.floor(rounds / 20))],
] as const) {
  if (small && encodeRecord(change).length > 4096) continue;
  const times: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const t0 = performance.now();
    journal.write(change);
    journal.clear();
    if (i >= 5) times.push(performance.now() - t0);
  }
  // On a loaded machine the median holds the waits for a CPU; the least is the work itself.
  console.log(
    `${what}: ${(encodeRecord(change).length / 1024).toFixed(1)} KiB, write + unlink least ${text(Math.min(...times))}, median ${text(median(times))} (${n} rounds)`,
  );
}
rmSync(dir, { recursive: true, force: true });
