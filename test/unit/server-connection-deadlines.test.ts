/**
 * ServerConnection, pure (test/helpers/server-harness.ts): a call's
 * deadline (timeout_nano): the handler's signal aborts and
 * DEADLINE_EXCEEDED is answered, also to a handler that ignores it; no
 * deadline without one; one longer than a JS timer holds does not fire.
 */

import { describe, expect, it } from "vitest";
import { Code } from "../../src/ttrpc/codes";
import type { CallContext } from "../../src/ttrpc/service";
import { deferred, harness, SERVING } from "../helpers/server-harness";

describe("ServerConnection: the error table, deadlines", () => {
  it("timeout_nano -> the handler's signal aborts and DEADLINE_EXCEEDED is answered", async () => {
    let ctxSeen: CallContext | undefined;
    let abortedInHandler = false;
    const h = harness({
      check: (_req, ctx) => {
        ctxSeen = ctx;
        return new Promise((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            abortedInHandler = ctx.signal.aborted;
            reject(ctx.signal.reason);
          });
        });
      },
    });
    const before = performance.now();
    h.send(1, { timeoutNano: 30_000_000n });
    await h.conn.drain();
    expect(abortedInHandler).toBe(true);
    expect(ctxSeen?.signal.aborted).toBe(true);
    expect(ctxSeen?.deadline).toBeGreaterThanOrEqual(before + 30);
    expect(ctxSeen?.deadline).toBeLessThan(before + 30 + 1_000);
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([[1, Code.DEADLINE_EXCEEDED]]);
  });

  it("timeout_nano -> DEADLINE_EXCEEDED even when the handler ignores its signal", async () => {
    const never = deferred<typeof SERVING>();
    let signal: AbortSignal | undefined;
    const h = harness({
      check: (_req, ctx) => {
        signal = ctx.signal;
        return never.promise;
      },
    });
    h.send(1, { timeoutNano: 10_000_000 });
    await h.until(1);
    expect(signal?.aborted).toBe(true);
    expect(h.answers[0]?.code).toBe(Code.DEADLINE_EXCEEDED);
    // A late result is not sent a second time.
    never.resolve(SERVING);
    await h.conn.drain();
    expect(h.answers).toHaveLength(1);
  });

  it("without timeout_nano the handler has no deadline and an unaborted signal", async () => {
    let ctxSeen: CallContext | undefined;
    const h = harness({
      check: (_req, ctx) => {
        ctxSeen = ctx;
        return SERVING;
      },
    });
    h.send(1);
    await h.conn.drain();
    expect(ctxSeen?.deadline).toBeUndefined();
    expect(ctxSeen?.signal.aborted).toBe(false);
  });

  it("a deadline longer than a JS timer can hold (> 2^31-1 ms) does not fire at once", async () => {
    let ctxSeen: CallContext | undefined;
    const h = harness({
      check: async (_req, ctx) => {
        ctxSeen = ctx;
        // Give an overflowed timer (clamped to 1 ms) the chance to fire.
        // not a wait: a stretch in which an overflowed (clamped) timer would have fired
        await new Promise((r) => setTimeout(r, 20));
        return SERVING;
      },
    });
    h.send(1, { timeoutNano: 30n * 24n * 3600n * 1_000_000_000n }); // 30 days
    h.send(3, { timeoutNano: 0x7fff_ffff_ffff_ffffn }); // int64 max
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.OK],
      [3, Code.OK],
    ]);
    expect(ctxSeen?.signal.aborted).toBe(false);
  });
});
