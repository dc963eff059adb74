/**
 * Runs two measurements in pairs, A B then B A, alternating, so drift in a
 * shared, noisy machine falls on both sides alike. Each run gets `first`
 * (true in pair 0 only), for a check worth doing once.
 */
export async function interleave(
  pairs: number,
  runA: (first: boolean) => Promise<unknown>,
  runB: (first: boolean) => Promise<unknown>,
): Promise<void> {
  for (let i = 0; i < pairs; i++) {
    if (i % 2 === 0) {
      await runA(i === 0);
      await runB(i === 0);
    } else {
      await runB(false);
      await runA(false);
    }
  }
}
