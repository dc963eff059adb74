/**
 * The long run of a crash mid-change: kill -9 inside each kind of network change many
 * times (test/support/crash-run.ts does one kill: fresh netns, the change,
 * SIGKILL after a random delay within the change's measured duration, the
 * agent restarted at once with the same flags, the network read
 * independently) and print the table: exactly old / exactly new / mixed, per
 * kind and kill mode (the agent alone, or its process group with its `ip`
 * children). Modes alternate kill by kill. Needs root and a built
 * dist/netagent (NETAGENT_BIN for another build; NETAGENT_CRASH_SETSID=1 for
 * a build that makes no process group of its own).
 *
 *   bun bench/crash-kills.ts [--kinds routes,link,neighbours,iptables,state]
 *                            [--kills 300] [--parallel 3] [--json dist/crash-kills.json]
 *                            [--recalibrate 25]
 *
 * --kills is interrupted changes per kind (both modes together). Kinds run
 * side by side (--parallel at a time), each in its own namespaces. The
 * change's duration is measured again every --recalibrate interrupted
 * changes (0: once): on a shared machine whose load climbs, one measure
 * taken at the start puts the kills ever earlier in the change (SetIPTables
 * at load 25-30: 10 of 300 kills after its record was written).
 */
import { writeFileSync } from "node:fs";
import { KINDS } from "../test/support/crash-kinds";
import {
  calibrate,
  countRecovery,
  type KillMode,
  type KillOutcome,
  killOnce,
  renderTally,
  type Tally,
} from "../test/support/crash-run";
import { option } from "./lib/args";

const kinds = option("--kinds", KINDS.map((k) => k.name).join(",")).split(",");
const kills = Number(option("--kills", "300"));
const jsonOut = option("--json", "dist/crash-kills.json");
const parallel = Number(option("--parallel", "3"));
const recalibrateEvery = Number(option("--recalibrate", "25"));
/** Kills that ended without a verdict (a start that timed out, ...): reported, never counted. */
const errors: string[] = [];
/** Kills whose first read was neither state and differed from the next (reported, KillOutcome.reread). */
const rereads: KillOutcome[] = [];
/** The tallies so far, written after every kill: a run stopped early still has its figures. */
const progress = new Map<string, Tally[]>();
const what = (name: string) => KINDS.find((k) => k.name === name)?.what ?? name;
function saveProgress(): void {
  const tallies = [...progress.values()].flat();
  writeFileSync(
    `${jsonOut}.partial.md`,
    `${renderTally(tallies, what)}\nkills without a verdict: ${errors.length}\n`,
  );
}

async function runKind(
  name: string,
): Promise<{ tallies: Tally[]; mixed: KillOutcome[]; durations: number[] }> {
  const kind = KINDS.find((k) => k.name === name);
  if (!kind) throw new Error(`no kind ${name} (${KINDS.map((k) => k.name).join(", ")})`);
  let cal = await calibrate(kind);
  process.stderr.write(`${name}: the change takes ${cal.durationMs.toFixed(0)} ms\n`);
  const durations = [cal.durationMs];
  const tally = (mode: KillMode): Tally => ({
    kind: name,
    mode,
    old: 0,
    new: 0,
    mixed: 0,
    late: 0,
    restored: 0,
  });
  const tallies = { agent: tally("agent"), group: tally("group") };
  const mixed: KillOutcome[] = [];
  let done = 0;
  for (let i = 0; done < kills; i++) {
    const mode: KillMode = i % 2 === 0 ? "agent" : "group";
    let o: KillOutcome;
    try {
      o = await killOnce(kind, cal, mode, Math.random() * cal.durationMs);
    } catch (err) {
      // Not a verdict: counted and said, the run goes on.
      errors.push(`${name} (${mode}): ${(err as Error).message}`);
      process.stderr.write(`${name}: error: ${(err as Error).message}\n`);
      if (errors.length > 20) throw err;
      continue;
    }
    const t = tallies[mode];
    if (o.answered) {
      t.late++;
      continue;
    }
    done++;
    t[o.verdict]++;
    countRecovery(t, o);
    if (o.reread) {
      t.rereads = (t.rereads ?? 0) + 1;
      rereads.push(o);
      process.stderr.write(
        `${name}: a read differed from the next one: ${JSON.stringify(o.reread)}\n`,
      );
    }
    if (o.verdict === "mixed") {
      mixed.push(o);
      process.stderr.write(
        `${name}: MIXED after ${o.delayMs.toFixed(0)} ms (${mode}): ${JSON.stringify(o.diff)}\n`,
      );
    }
    if (done % 25 === 0) process.stderr.write(`${name}: ${done}/${kills}\n`);
    if (recalibrateEvery > 0 && done % recalibrateEvery === 0 && done < kills) {
      const again = await calibrate(kind).catch((err: Error) => {
        errors.push(`${name}: calibration: ${err.message}`);
        return undefined;
      });
      // The same old and new states, or the verdicts would judge against another pair.
      if (again && again.old === cal.old && again.new === cal.new) {
        cal = { ...cal, durationMs: again.durationMs };
        durations.push(again.durationMs);
        process.stderr.write(`${name}: the change now takes ${again.durationMs.toFixed(0)} ms\n`);
      } else if (again) {
        process.stderr.write(`${name}: a calibration read other states: duration kept\n`);
      }
    }
    progress.set(name, [tallies.agent, tallies.group]);
    saveProgress();
  }
  return { tallies: [tallies.agent, tallies.group], mixed, durations };
}

const t0 = performance.now();
const results: Awaited<ReturnType<typeof runKind>>[] = [];
const queue = [...kinds];
await Promise.all(
  Array.from({ length: parallel }, async () => {
    for (let k = queue.shift(); k !== undefined; k = queue.shift()) results.push(await runKind(k));
  }),
);
results.sort(
  (a, b) => kinds.indexOf(a.tallies[0]?.kind ?? "") - kinds.indexOf(b.tallies[0]?.kind ?? ""),
);
const tallies = results.flatMap((r) => r.tallies);
const table = renderTally(tallies, what);
console.log(table);
console.log(
  `\n${tallies.length / 2} kinds, ${kills} interrupted changes each, ${((performance.now() - t0) / 60_000).toFixed(1)} min`,
);
for (const r of results) {
  const d = r.durations;
  console.log(
    `${r.tallies[0]?.kind}: the change took ${Math.min(...d).toFixed(0)}-${Math.max(...d).toFixed(0)} ms over ${d.length} calibrations`,
  );
}
console.log(`kills without a verdict: ${errors.length}${errors.map((e) => `\n  ${e}`).join("")}`);
writeFileSync(
  jsonOut,
  JSON.stringify({ tallies, errors, rereads, mixed: results.flatMap((r) => r.mixed) }, null, 2),
);
process.exit(results.some((r) => r.mixed.length > 0) ? 1 : 0);
