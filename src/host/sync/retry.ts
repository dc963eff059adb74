/**
 * Bounded retry with exponential backoff and jitter, for the one case the
 * Kata runtime retries: UpdateInterface answered "Link not found" while the
 * guest's NIC is still being hot-plugged (docs/kata-runtime.md:
 * 20 attempts, 20 ms·2^n + 0–100 ms). Unlike the runtime, each delay is
 * capped, so the whole wait is bounded.
 */
import { setTimeout as delay } from "node:timers/promises";

export interface RetryPolicy {
  /** Attempts in all, the first included (default 20). */
  attempts: number;
  /** Delay before retry n (0-based) is baseMs·2^n, capped at maxDelayMs, plus jitter. */
  baseMs: number;
  maxDelayMs: number;
  /** Uniform random extra delay in [0, jitterMs). */
  jitterMs: number;
}

export const KATA_RETRY: RetryPolicy = {
  attempts: 20,
  baseMs: 20,
  maxDelayMs: 2000,
  jitterMs: 100,
};

/** The runtime's test: retry only while the answer says "Link not found". */
export function isLinkNotFound(err: unknown): boolean {
  return err instanceof Error && err.message.includes("Link not found");
}

/** The delay before retry `n` (0-based); `random` in [0, 1). */
export function backoffDelay(policy: RetryPolicy, n: number, random: number): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseMs * 2 ** Math.min(n, 30));
  return exp + Math.floor(random * policy.jitterMs);
}

export interface RetryHooks {
  /** Called before each wait: the attempt that failed (1-based), its error, the delay. */
  onRetry?: (attempt: number, err: unknown, delayMs: number) => void;
  sleep?: (ms: number) => Promise<unknown>;
  random?: () => number;
}

/**
 * Runs `fn` until it succeeds, fails with an error `shouldRetry` rejects, or
 * the attempts run out (the last error is thrown). Resolves with the value
 * and the number of attempts made.
 */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  shouldRetry: (err: unknown) => boolean,
  policy: RetryPolicy = KATA_RETRY,
  hooks: RetryHooks = {},
): Promise<{ value: T; attempts: number }> {
  const sleep = hooks.sleep ?? delay;
  const random = hooks.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await fn(attempt), attempts: attempt };
    } catch (err) {
      if (attempt >= policy.attempts || !shouldRetry(err)) throw err;
      const ms = backoffDelay(policy, attempt - 1, random());
      hooks.onRetry?.(attempt, err, ms);
      await sleep(ms);
    }
  }
}
