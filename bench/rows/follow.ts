/**
 * `netagentctl follow` on a node of N sandboxes (bench/lib/kata-node.ts),
 * beside N `sync --watch` processes following the same pods into the same
 * agents:
 * - start: the follower's start to every sandbox `equal` in /sandboxes;
 * - memory: PSS and RSS summed over the follower's process tree (it and
 *   every monitor it started), from /proc/PID/smaps_rollup, once all are
 *   equal and 5 s quiet; the same over the N watchers' trees;
 * - idle CPU: utime+stime of each tree over a quiet spell (--quiet-s);
 * - change to equal: a route added or removed in one pod at a time, from
 *   the `ip` command's return to the guest event after which an
 *   independent read of the guest equals the pod (the guest's own
 *   `ip monitor`, nothing polls); then one change in each of half the pods
 *   at once, to the last of those guests equal;
 * - a sandbox that appears: from its directory written (its agent already
 *   answering, its pod settled as a Kata pod is before its VM boots) to
 *   `equal` in /sandboxes, then equal by an independent read;
 *   one that goes away: from its directory removed to its absence from
 *   /sandboxes with its `xtables-monitor` ended (then its pod, guest and
 *   agent are torn down, so the N watchers after it follow N pods).
 *
 * Alone, as root, after `npm run build`:
 *   bun bench/rows/follow.ts [--sandboxes 40] [--changes 20] [--quiet-s 30] [--no-watch] [--no-latency]
 *                            [--sandboxes-json FILE]
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Netns } from "../../test/helpers/netns";
import { processName, processTree } from "../../test/helpers/process";
import { waitFor } from "../../test/helpers/wait";
import { FollowerProc } from "../../test/host/follow-helpers";
import { cpuTicks, guestEqualsPod, Watcher } from "../../test/host/watch-helpers";
import { flag, option } from "../lib/args";
import { type BenchSandbox, KataNode } from "../lib/kata-node";
import { summarize } from "../lib/stats";
import { treeMemory } from "../lib/tree-memory";
import { GuestFollower } from "./watch";

const TICK_MS = 10;
const n = Number(option("--sandboxes", "40"));
const changes = Number(option("--changes", "20"));
const quietS = Number(option("--quiet-s", "30"));
/** Where to write the /sandboxes answer once all are equal. */
const dumpTo = flag("--sandboxes-json") ? option("--sandboxes-json") : undefined;
const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
const load = () =>
  Bun.file("/proc/loadavg")
    .text()
    .then((t) => t.split(" ").slice(0, 3).join(" "));

/** Milliseconds from a change made by `change()` in `sb`'s pod to its guest equal. */
async function changeToEqual(sb: BenchSandbox, change: () => Promise<unknown>): Promise<number> {
  const g = new GuestFollower(sb.pod, sb.guest);
  await g.monitor.start();
  try {
    await change();
    const t0 = performance.now();
    return await g.settled(t0, [sb.mac]);
  } finally {
    g.monitor.stop();
  }
}

async function latency(node: KataNode, round: number) {
  const one: number[] = [];
  for (let i = 0; i < changes; i++) {
    const sb = node.sandboxes[(i * 7) % n] as BenchSandbox;
    const net = `198.18.${round * 50 + Math.floor(i / 2)}.0/24`;
    const args = i % 2 === 0 ? ["route", "add", net, "via", sb.gw] : ["route", "del", net];
    // i even adds a route to a pod, i odd removes it again.
    const target = i % 2 === 0 ? sb : (node.sandboxes[((i - 1) * 7) % n] as BenchSandbox);
    one.push(await changeToEqual(target, () => target.pod.ip(...args)));
  }
  const half = node.sandboxes.slice(0, Math.max(1, n >> 1));
  const followers = half.map((sb) => new GuestFollower(sb.pod, sb.guest));
  await Promise.all(followers.map((g) => g.monitor.start()));
  const t0 = performance.now();
  await Promise.all(
    half.map((sb) => sb.pod.ip("route", "add", `198.19.${round}.0/24`, "via", sb.gw)),
  );
  const burst = await Promise.all(
    followers.map((g, k) => g.settled(t0, [(half[k] as BenchSandbox).mac], 60_000)),
  );
  for (const g of followers) g.monitor.stop();
  return { one: summarize(one), burstMax: Math.max(...burst), burstN: half.length };
}

async function idleTicks(pids: number[]): Promise<number> {
  const t0 = pids.reduce((s, p) => s + cpuTicks(p), 0);
  await Bun.sleep(quietS * 1000);
  return pids.reduce((s, p) => s + cpuTicks(p), 0) - t0;
}

/**
 * Milliseconds from a new sandbox's directory written (its agent already
 * answering, its pod's link settled: KataNode.add) to `equal`; then from its
 * directory removed to its absence from /sandboxes with its
 * xtables-monitor ended.
 */
async function appearAndGo(node: KataNode, f: FollowerProc) {
  const sb = await node.add(node.sandboxes.length, true);
  const t0 = performance.now();
  await f.until(sb.id, (x) => x.state === "equal", "equal", 60_000);
  const appearMs = Math.round(performance.now() - t0);
  if (!(await guestEqualsPod(sb.pod, sb.guest, [sb.mac])))
    throw new Error(`${sb.id} not equal by an independent read`);
  const monitors = () =>
    processTree(f.child.pid).filter((p) => processName(p) === "xtables-monitor").length;
  const before = monitors();
  const t1 = performance.now();
  rmSync(join(node.root, sb.id), { recursive: true, force: true });
  await waitFor(
    async () => !(await f.sandboxes()).some((x) => x.id === sb.id) && monitors() === before - 1,
    { timeoutMs: 60_000, what: `${sb.id} dropped, its xtables-monitor ended` },
  );
  const goneMs = Math.round(performance.now() - t1);
  await node.drop(sb);
  return { appearMs, goneMs };
}

/** The follower process's own RssAnon and RssFile (KiB): its heap against the binary's pages. */
function mainMemory(pid: number): Record<string, number> {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (k: string) =>
    Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { rssAnonKiB: field("RssAnon"), rssFileKiB: field("RssFile"), hwmKiB: field("VmHWM") };
}

async function main() {
  const node = await KataNode.create();
  const followNs = await Netns.create("nh5f");
  const out: Record<string, unknown> = { sandboxes: n, loadBefore: await load() };
  let f: FollowerProc | undefined;
  try {
    for (let i = 0; i < n; i++) await node.add(i);
    const t0 = performance.now();
    f = await FollowerProc.start(followNs, [node.root], node.dir.join("status.sock"));
    const started = f;
    for (const sb of node.sandboxes) {
      await started.until(sb.id, (x) => x.state === "equal", "equal", 900_000);
    }
    out.allEqualMs = Math.round(performance.now() - t0);
    if (dumpTo) writeFileSync(dumpTo, JSON.stringify(await started.sandboxes(), null, 1));
    for (const sb of node.sandboxes) {
      if (!(await guestEqualsPod(sb.pod, sb.guest, [sb.mac])))
        throw new Error(`${sb.id} not equal by an independent read`);
    }
    await Bun.sleep(5000);
    out.follow = treeMemory([f.child.pid]);
    out.followMain = mainMemory(f.child.pid);
    out.followIdleCpuPct = ((await idleTicks([f.child.pid])) * TICK_MS) / (quietS * 10);
    console.log(JSON.stringify(out)); // what is measured so far, should a later step fail
    out.appearAndGo = await appearAndGo(node, f);
    if (!flag("--no-latency")) out.followLatency = await latency(node, 0);
    out.loadDuringFollow = await load();
    await f.child.stop("SIGTERM");
    if (!flag("--no-watch")) {
      const watchers: Watcher[] = [];
      for (const sb of node.sandboxes)
        watchers.push(await Watcher.start(`unix://${sb.agent.socket}`, sb.pod.name, [], 120_000));
      await Bun.sleep(5000);
      out.watch = treeMemory(watchers.map((w) => w.child.pid));
      out.watchIdleCpuPct =
        ((await idleTicks(watchers.map((w) => w.child.pid))) * TICK_MS) / (quietS * 10);
      out.watchLatency = await latency(node, 1);
      for (const w of watchers) await w.child.stop("SIGTERM");
    }
  } catch (err) {
    console.error(
      `follower's last lines:\n${f?.child.stdout.slice(-3000)}\n${f?.child.stderr.slice(-2000)}`,
    );
    throw err;
  } finally {
    await f?.child.kill();
    await followNs.remove();
    await node.remove();
  }
  out.loadAfter = await load();
  for (const k of ["follow", "watch"]) {
    const m = out[k] as { pssKiB: number; rssKiB: number } | undefined;
    if (m) console.log(`${k}: ${mib(m.pssKiB)} MiB PSS, ${mib(m.rssKiB)} MiB RSS`);
  }
  console.log(JSON.stringify(out, null, 1));
}

await main();
