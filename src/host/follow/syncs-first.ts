/**
 * Syncs before checks, node-wide. A sync (reading a pod, then its Apply)
 * brings a guest equal; the complete comparison that follows only says so,
 * and costs more CPU than the sync (both sides read whole). When many pods
 * change at once (a node's start, a burst), comparisons run beside the
 * other pods' syncs and slow them on a small machine; so a comparison
 * waits until no sync is running, at most {@link CHECK_YIELD_MAX_MS}, so
 * that a node that never stops changing is still verified.
 */

/** The longest a comparison waits for the node's syncs to end. */
const CHECK_YIELD_MAX_MS = 2000;
/** How often a waiting comparison looks again. */
const POLL_MS = 20;

export class SyncsFirst {
  private running = 0;

  /** Runs one phase of a sync (its read, its drive): comparisons wait meanwhile. */
  async sync<T>(phase: () => Promise<T>): Promise<T> {
    this.running++;
    try {
      return await phase();
    } finally {
      this.running--;
    }
  }

  /** Resolves once no sync runs, or after `maxMs`. */
  async quiet(maxMs = CHECK_YIELD_MAX_MS): Promise<void> {
    const until = performance.now() + maxMs;
    while (this.running > 0 && performance.now() < until) await Bun.sleep(POLL_MS);
  }
}
