/**
 * Waiting for a condition without sleeping a fixed time: poll `probe` until
 * it returns a value other than undefined/false, or fail at the deadline.
 */
import { setTimeout as delay } from "node:timers/promises";

export interface WaitOptions {
  /** Give up after this many milliseconds (default 10 s). */
  timeoutMs?: number;
  /** Time between probes (default 10 ms). */
  intervalMs?: number;
  /** What is awaited, for the error message. */
  what?: string;
}

/** Resolves with the first truthy result of `probe`; probe errors count as "not yet". */
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 10_000, intervalMs = 10, what = "condition" }: WaitOptions = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    // not a wait: the interval between two probes of a bounded wait
    await delay(intervalMs);
  }
}
