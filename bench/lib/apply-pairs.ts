/**
 * What rows 10 and 12 share: an Apply against a floor that makes the same
 * changes by hand, each run from the same starting state, checked once
 * after a warm-up pair, then timed in interleaved pairs; the ratio is the
 * median of the per-pair ratios.
 */
import { interleave } from "./interleave";

export interface ApplyPairs {
  pairs: number;
  /** Puts the guest back to the starting state (not timed). */
  reset(): Promise<void>;
  /** The Apply, timed from request to answer. */
  apply(): Promise<unknown>;
  /** The floor: its own time in ms (what it prepares first is not counted). */
  floor(): Promise<number>;
  /** Throws naming `what` when the guest is not in the desired state. */
  check(what: string): Promise<void>;
  floorWhat: string;
}

export async function applyPairs(
  p: ApplyPairs,
): Promise<{ a: number[]; b: number[]; ratios: number[] }> {
  const a: number[] = [];
  const b: number[] = [];
  const runA = async (verify: boolean) => {
    await p.reset();
    const t0 = performance.now();
    await p.apply();
    a.push(performance.now() - t0);
    if (verify) await p.check("Apply");
  };
  const runB = async (verify: boolean) => {
    await p.reset();
    b.push(await p.floor());
    if (verify) await p.check(p.floorWhat);
  };
  await runA(true);
  await runB(true);
  a.length = 0;
  b.length = 0;
  await interleave(p.pairs, runA, runB);
  return { a, b, ratios: a.map((x, i) => x / (b[i] as number)) };
}
