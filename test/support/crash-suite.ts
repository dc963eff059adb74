/**
 * A crash mid-change, the CI-sized run, one kill mode per test file (the two files
 * run side by side): for each kind of network change, kill -9 at random
 * moments inside it, restart the agent at once with the same flags, read
 * the network independently: exactly the old state or exactly the new one,
 * never mixed. The long run (300+ kills a kind) is bench/crash-kills.ts;
 * its figures are in bench/README.md.
 */
import { describe, expect, it } from "vitest";
import { KINDS } from "./crash-kinds";
import { calibrate, type KillMode, killRun, renderTally } from "./crash-run";

/** Interrupted changes per kind (NETAGENT_CRASH_KILLS: more for a longer run). */
const KILLS = Number(process.env.NETAGENT_CRASH_KILLS ?? 10);

export function describeKills(mode: KillMode): void {
  const who =
    mode === "agent" ? "the agent alone" : "the agent and its ip children (its process group)";
  describe.each(KINDS)(`$name: ${who} killed in the middle of the change`, (kind) => {
    it(
      `${KILLS} kills: exactly old or exactly new, never mixed`,
      async () => {
        const cal = await calibrate(kind);
        const { tally, mixed } = await killRun(kind, cal, mode, KILLS);
        console.log(
          `${kind.what} (${cal.durationMs.toFixed(0)} ms)\n${renderTally([tally], () => kind.name)}`,
        );
        expect(mixed).toEqual([]);
        expect(tally.old + tally.new).toBe(KILLS);
      },
      30 * 60_000,
    );
  });
}
