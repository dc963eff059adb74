/**
 * The watch loop's scheduler on a simulated clock: debounce, max wait, one
 * sync in flight, exactly one more after changes during a sync, backoff on
 * retryable failures, stop waiting for the sync in flight. A property test
 * checks the invariants over random event orders.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  INITIAL_RESYNC,
  nextResync,
  RESYNC_DEFAULTS,
  ResyncScheduler,
  resyncBackoff,
  type SyncOutcome,
} from "../../../src/host/watch/resync-scheduler";

/** A fake clock: timers fire when `advance` passes them. */
class Clock {
  t = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private next = 1;
  setTimer = (fn: () => void, ms: number) => {
    const id = this.next++;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  };
  clearTimer = (h: unknown) => {
    this.timers.delete(h as number);
  };
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const due = [...this.timers.entries()]
        .filter(([, x]) => x.at <= end)
        .sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.t = due[1].at;
      due[1].fn();
      await flush();
    }
    this.t = end;
    await flush();
  }
}

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

/** A scheduler whose syncs end when the test says so. */
function harness(config = RESYNC_DEFAULTS) {
  const clock = new Clock();
  const started: number[] = [];
  const finishers: ((o: SyncOutcome) => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const s = new ResyncScheduler(
    () => {
      started.push(clock.t);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      return new Promise<SyncOutcome>((resolve) =>
        finishers.push((o) => {
          inFlight--;
          resolve(o);
        }),
      );
    },
    config,
    { now: () => clock.t, random: () => 0, setTimer: clock.setTimer, clearTimer: clock.clearTimer },
  );
  const finish = async (o: SyncOutcome = "ok") => {
    const f = finishers.shift();
    if (!f) throw new Error("no sync in flight");
    f(o);
    await flush();
  };
  return { clock, s, started, finish, maxInFlight: () => maxInFlight };
}

describe("ResyncScheduler", () => {
  it("a burst of changes closer than the debounce gives one sync, debounce after the last", async () => {
    const { clock, s, started, finish } = harness();
    for (let i = 0; i < 5; i++) {
      s.notify();
      await clock.advance(10);
    }
    expect(started).toEqual([]);
    await clock.advance(100);
    expect(started).toEqual([40 + 30]);
    await finish();
    await clock.advance(1000);
    expect(started).toHaveLength(1);
    expect(s.phase).toBe("idle");
  });

  it("a pod that never goes quiet is still synced after maxWaitMs", async () => {
    const { clock, s, started } = harness();
    for (let i = 0; i < 100; i++) {
      s.notify();
      await clock.advance(5);
    }
    expect(started).toEqual([RESYNC_DEFAULTS.maxWaitMs]);
  });

  it("changes during a sync give exactly one more sync, never two at once", async () => {
    const { clock, s, started, finish, maxInFlight } = harness();
    s.notify();
    await clock.advance(30);
    expect(started).toHaveLength(1);
    for (let i = 0; i < 50; i++) {
      s.notify();
      await clock.advance(7);
    }
    expect(started).toHaveLength(1);
    await finish();
    await clock.advance(30);
    expect(started).toHaveLength(2);
    await finish();
    await clock.advance(10_000);
    expect(started).toHaveLength(2);
    expect(maxInFlight()).toBe(1);
  });

  it("a retryable failure is retried with growing backoff; changes meanwhile do not hurry it", async () => {
    const { clock, s, started, finish } = harness();
    s.notify();
    await clock.advance(30);
    await finish("retry");
    s.notify();
    await clock.advance(99);
    expect(started).toHaveLength(1);
    await clock.advance(1);
    expect(started).toEqual([30, 130]);
    await finish("retry");
    await clock.advance(200);
    expect(started).toEqual([30, 130, 330]);
    await finish("ok");
    await clock.advance(10_000);
    expect(started).toHaveLength(3);
    // After a success the count starts again.
    s.notify();
    await clock.advance(30);
    await finish("retry");
    await clock.advance(100);
    expect(started).toHaveLength(5);
  });

  it("a non-retryable failure waits for the next change", async () => {
    const { clock, s, started, finish } = harness();
    s.notify();
    await clock.advance(30);
    await finish("failed");
    await clock.advance(60_000);
    expect(started).toHaveLength(1);
    s.notify();
    await clock.advance(30);
    expect(started).toHaveLength(2);
  });
});

describe("ResyncScheduler: stop, backoff, any order of events", () => {
  it("stop waits for the sync in flight and starts no other", async () => {
    const { clock, s, started, finish } = harness();
    s.notify();
    await clock.advance(30);
    s.notify();
    let stopped = false;
    const p = s.stop().then(() => {
      stopped = true;
    });
    await flush();
    expect(stopped).toBe(false);
    await finish();
    await p;
    expect(stopped).toBe(true);
    await clock.advance(10_000);
    expect(started).toHaveLength(1);
  });

  it("stop while idle or debouncing ends at once, with no sync", async () => {
    const { clock, s, started } = harness();
    s.notify();
    await s.stop();
    await clock.advance(1000);
    expect(started).toEqual([]);
    expect(s.phase).toBe("stopped");
  });

  it("backoff is capped and jittered", () => {
    expect(resyncBackoff(RESYNC_DEFAULTS, 1, 0)).toBe(100);
    expect(resyncBackoff(RESYNC_DEFAULTS, 3, 0)).toBe(400);
    expect(resyncBackoff(RESYNC_DEFAULTS, 40, 0)).toBe(5000);
    expect(resyncBackoff(RESYNC_DEFAULTS, 40, 0.99)).toBe(5099);
  });

  it("property: whatever the order of events, never two syncs at once; a change is always followed by a sync that starts after it", () => {
    const event = fc.oneof(
      fc.record({ type: fc.constant("change" as const), dt: fc.integer({ min: 0, max: 50 }) }),
      fc.record({ type: fc.constant("timer" as const), dt: fc.integer({ min: 0, max: 50 }) }),
      fc.record({
        type: fc.constant("done" as const),
        dt: fc.integer({ min: 0, max: 50 }),
        outcome: fc.constantFrom<SyncOutcome>("ok", "retry", "failed"),
      }),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), (events) => {
        let s = INITIAL_RESYNC;
        let now = 0;
        let inFlight = 0;
        let armed = false;
        let pendingChange = false; // a change not yet covered by a sync started after it
        const apply = (e: Parameters<typeof nextResync>[1]) => {
          const r = nextResync(s, e, RESYNC_DEFAULTS, 0.5);
          s = r.state;
          for (const a of r.actions) {
            if (a.type === "arm") armed = true;
            if (a.type === "disarm") armed = false;
            if (a.type === "sync") {
              inFlight++;
              pendingChange = false;
              expect(inFlight).toBe(1);
            }
          }
        };
        for (const e of events) {
          now += e.dt;
          if (e.type === "change") {
            apply({ type: "change", now });
            pendingChange = true;
          } else if (e.type === "timer") {
            if (!armed) continue;
            armed = false;
            apply({ type: "timer", now });
          } else {
            if (inFlight === 0) continue;
            inFlight--;
            apply({ type: "done", outcome: e.outcome, now });
          }
        }
        // Let it settle: timers fire, syncs succeed.
        for (let i = 0; i < 10; i++) {
          if (inFlight) {
            inFlight--;
            apply({ type: "done", outcome: "ok", now });
          } else if (armed) {
            armed = false;
            apply({ type: "timer", now });
          }
        }
        expect(pendingChange).toBe(false);
        expect(s.phase).toBe("idle");
      }),
      { numRuns: 500 },
    );
  });
});
