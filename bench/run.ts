/**
 * `npm run bench`: every row of issue #6 in one run, printed as one table
 * and written to dist/bench.json. Not part of the test command; needs root
 * (network namespaces), a built dist/netagent, and Go for rows 1-2.
 *
 *   bun bench/run.ts [--rows 1,2,3,4,5,6,7,8,9,10,11,12] [--pairs 7] [--counts 1,100,1000,10000,50000]
 *                    [--big-pairs 5] [--no-change-counts 100,10000] [--first-call-counts 10000]
 *                    [--calls 100000]
 *                    [--slope-calls 300000] [--vm-boots 3] [--vm-pairs 3] [--vm-idle-ms 10000]
 *                    [--vm-guest DIR (row 9's guest directory, default dist/guest)]
 *                    [--vm-ctl PATH (the netagentctl syncing row 9's pod, default dist/netagentctl)]
 *                    [--watch-changes 200] [--quiet-s 60] [--quick]
 *
 * Row 9 boots QEMU guests (TCG unless KVM really runs one; NETAGENT_ACCEL=tcg
 * forces it): minutes under TCG, runnable alone with --rows 9.
 * Row 11 (sync --watch) includes a quiet minute; alone: bun bench/rows/watch.ts.
 *
 * Everything is ratios of interleaved runs (A B / B A) against a reference
 * measured in the same run: the machine is shared and noisy.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { SETUP_BY_HAND } from "./lib/bench-netns";
import { BUN, NETAGENT, ROOT } from "./lib/proc";
import { type Row, renderTable } from "./lib/row";
import { coldStartRows } from "./rows/cold-start";
import { largeMessageRows } from "./rows/large-message";
import { largeStateRows } from "./rows/large-state";
import { memoryRows } from "./rows/memory";
import { podSyncRows } from "./rows/pod-sync";
import { stateApplyRows } from "./rows/state-apply";
import { ttrpcRows } from "./rows/ttrpc";
import { updateRoutesRows } from "./rows/update-routes";
import { vmRows } from "./rows/vm";
import { watchRows } from "./rows/watch";

const argv = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const list = (name: string, dflt: number[]) => opt(name)?.split(",").map(Number) ?? dflt;
const quick = argv.includes("--quick");
const rowsWanted = new Set(list("--rows", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
const pairs = Number(opt("--pairs") ?? (quick ? 3 : 7));
const bigPairs = Number(opt("--big-pairs") ?? (quick ? 1 : 5));

/** Namespaces this run made are named nb-PID-*: on a signal, stop their processes and delete them. */
function cleanupNamespaces(): void {
  const r = spawnSync("ip", ["netns", "list"], { encoding: "utf8" });
  for (const line of r.stdout?.split("\n") ?? []) {
    const name = line.split(" ")[0];
    if (!name?.startsWith(`nb-${process.pid}-`)) continue;
    const pids = spawnSync("ip", ["netns", "pids", name], { encoding: "utf8" }).stdout ?? "";
    for (const pid of pids.split("\n").filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {}
    }
    spawnSync("ip", ["netns", "del", name]);
  }
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    cleanupNamespaces();
    process.exit(130);
  });
}

async function main(): Promise<void> {
  if (!existsSync(NETAGENT)) throw new Error(`${NETAGENT} is missing: run \`npm run build\` first`);
  const started = new Date();
  const t0 = performance.now();
  const rows: Row[] = [];
  const phase = async (name: string, f: () => Promise<Row[]> | Row[]) => {
    const p0 = performance.now();
    process.stderr.write(`bench: ${name}...\n`);
    rows.push(...(await f()));
    process.stderr.write(
      `bench: ${name} done in ${((performance.now() - p0) / 1000).toFixed(1)} s\n`,
    );
  };

  if (rowsWanted.has(1) || rowsWanted.has(2)) {
    await phase("rows 1-2 (bench/ttrpc)", () =>
      ttrpcRows(quick ? ["--pairs", "3", "--calls", "5000", "--starts", "5"] : []),
    );
  }
  let floorIdleKiB: number[] = [];
  let floorSplit = "";
  if (rowsWanted.has(5) || rowsWanted.has(6)) {
    await phase("row 5 (cold start)", async () => {
      const r = await coldStartRows(quick ? 5 : Math.max(pairs, 11));
      floorIdleKiB = r.floorIdleKiB;
      floorSplit = r.floorSplit;
      return rowsWanted.has(5) ? r.rows : [];
    });
  }
  if (rowsWanted.has(3) || rowsWanted.has(4)) {
    await phase("rows 3-4 (UpdateRoutes)", () =>
      updateRoutesRows({
        counts: rowsWanted.has(3)
          ? list("--counts", quick ? [1, 100, 1000, 10_000] : [1, 100, 1000, 10_000, 50_000])
          : [],
        pairs,
        bigPairs,
        noChangeCounts: rowsWanted.has(4) ? list("--no-change-counts", [100, 10_000]) : [],
        noChangePairs: pairs,
        firstCallCounts: rowsWanted.has(3) ? list("--first-call-counts", [10_000]) : [],
      }),
    );
  }
  if (rowsWanted.has(6)) {
    await phase("row 6 (memory)", () =>
      memoryRows({
        calls: Number(opt("--calls") ?? (quick ? 20_000 : 100_000)),
        slopeCalls: Number(opt("--slope-calls") ?? (quick ? 20_000 : 300_000)),
        concurrency: 16,
        routes: 10_000,
        floorIdleKiB,
        floorSplit,
      }),
    );
  }
  if (rowsWanted.has(7)) await phase("row 7 (large message)", () => largeMessageRows(pairs));
  if (rowsWanted.has(8)) await phase("row 8 (pod sync)", () => podSyncRows(Math.max(pairs, 11)));
  if (rowsWanted.has(10)) {
    await phase("row 10 (whole-state Apply)", () => stateApplyRows(Math.max(pairs, 11)));
  }
  if (rowsWanted.has(12)) {
    await phase("row 12 (large whole-state Apply)", () => largeStateRows(Math.max(pairs, 7)));
  }
  if (rowsWanted.has(9)) {
    await phase("row 9 (VM: image mode vs initramfs mode)", () =>
      vmRows({
        boots: Number(opt("--vm-boots") ?? 3),
        pairs: Number(opt("--vm-pairs") ?? (quick ? 1 : 3)),
        idleMs: Number(opt("--vm-idle-ms") ?? 10_000),
        ...(opt("--vm-guest") === undefined ? {} : { guest: opt("--vm-guest") as string }),
        ...(opt("--vm-ctl") === undefined ? {} : { ctl: opt("--vm-ctl") as string }),
      }),
    );
  }
  if (rowsWanted.has(11)) {
    await phase("row 11 (sync --watch)", () =>
      watchRows({
        changes: Number(opt("--watch-changes") ?? (quick ? 40 : 200)),
        quietS: Number(opt("--quiet-s") ?? (quick ? 10 : 60)),
      }),
    );
  }

  const bunVersion = execFileSync(BUN, ["--version"], { encoding: "utf8" }).trim();
  const gitRev = spawnSync("git", ["rev-parse", "--short", "HEAD"], {
    cwd: ROOT,
    encoding: "utf8",
  }).stdout?.trim();
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? "?"}; bun ${bunVersion}; git ${gitRev}`;
  const durationS = (performance.now() - t0) / 1000;
  const out = {
    started: started.toISOString(),
    durationS,
    machine,
    command: `bun bench/run.ts ${argv.join(" ")}`.trim(),
    setupByHand: SETUP_BY_HAND,
    rows,
  };
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  writeFileSync(join(ROOT, "dist/bench.json"), `${JSON.stringify(out, null, 2)}\n`);

  console.log(`machine: ${machine}; run took ${durationS.toFixed(0)} s`);
  console.log(
    "ratio = ours / reference (median of per-pair ratios); rows 1-2: throughput, higher is better\n",
  );
  console.log(renderTable(rows));
  console.log("\nset-up by hand for rows 3, 4 and 6 (as root; NS = any new name):");
  for (const c of SETUP_BY_HAND) console.log(`    $ ${c}`);
  console.log("\nnotes and commands to rerun each row:");
  rows.forEach((r, i) => {
    console.log(`- [${i + 1}] row ${r.id}, ${r.what}`);
    for (const n of r.notes ?? []) console.log(`    note: ${n}`);
    for (const c of r.commands) console.log(`    $ ${c}`);
  });
  console.log("\nwritten: dist/bench.json");
}

await main();
