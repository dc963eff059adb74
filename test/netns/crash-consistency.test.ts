/**
 * Issue 24, the CI-sized run: for each kind of network change, kill -9 at
 * random moments inside it (the agent alone, then the agent with its `ip`
 * children), restart the agent at once with the same flags, and read the
 * network independently: it must be exactly the old state or exactly the
 * new one, never mixed. The long run (300+ kills a kind) is
 * bench/crash/kill-run.ts; its figures are in bench/README.md.
 */
import { describe, expect, it } from "vitest";
import { KINDS } from "../support/crash-kinds";
import { calibrate, killRun, renderTally, type Tally } from "../support/crash-run";

/** Interrupted changes per kind and kill mode. */
const KILLS = Number(process.env.NETAGENT_CRASH_KILLS ?? 10);

describe.each(KINDS)("killed in the middle of a change: $name", (kind) => {
  it(
    `${KILLS} kills of the agent alone and ${KILLS} of its process group: exactly old or exactly new`,
    async () => {
      const cal = await calibrate(kind);
      const tallies: Tally[] = [];
      const mixed = [];
      for (const mode of ["agent", "group"] as const) {
        const r = await killRun(kind, cal, mode, KILLS);
        tallies.push(r.tally);
        mixed.push(...r.mixed);
      }
      console.log(
        `${kind.what} (${cal.durationMs.toFixed(0)} ms)\n${renderTally(tallies, () => kind.name)}`,
      );
      expect(mixed).toEqual([]);
      for (const t of tallies) expect(t.old + t.new).toBe(KILLS);
    },
    30 * 60_000,
  );
});
