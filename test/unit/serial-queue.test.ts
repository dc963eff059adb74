/** SerialQueue: one task at a time, in arrival order; a failure does not stop the queue. */
import { describe, expect, it } from "vitest";
import { SerialQueue } from "../../src/agent/apply/serial-queue";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { waitFor } from "../helpers/wait";

// not a wait: the tasks' own durations in the cases below
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("SerialQueue", () => {
  it("runs tasks one at a time in arrival order, whatever their duration", async () => {
    const q = new SerialQueue();
    const events: string[] = [];
    let running = 0;
    const task = (name: string, ms: number) => async () => {
      running++;
      expect(running).toBe(1);
      events.push(`start ${name}`);
      // not a wait: the task's own duration, which the queue's order must not follow
      await sleep(ms);
      events.push(`end ${name}`);
      running--;
      return name;
    };
    const results = await Promise.all([
      q.run(task("a", 30)),
      q.run(task("b", 1)),
      q.run(task("c", 10)),
    ]);
    expect(results).toEqual(["a", "b", "c"]);
    expect(events).toEqual(["start a", "end a", "start b", "end b", "start c", "end c"]);
  });

  it("passes a rejection to its caller and runs the next task anyway", async () => {
    const q = new SerialQueue();
    const first = q.run(async () => {
      // not a wait: the failing task's own duration
      await sleep(5);
      throw new Error("boom");
    });
    const second = q.run(async () => "next");
    await expect(first).rejects.toThrow("boom");
    await expect(second).resolves.toBe("next");
  });

  it("survives a task that throws synchronously", async () => {
    const q = new SerialQueue();
    const bad = q.run((() => {
      throw new Error("sync");
    }) as () => Promise<never>);
    await expect(bad).rejects.toThrow("sync");
    await expect(q.run(async () => 1)).resolves.toBe(1);
  });

  it("does not start a task before the previous one settles, even after failures", async () => {
    const q = new SerialQueue();
    const order: number[] = [];
    const runs = [0, 1, 2, 3, 4, 5].map((i) =>
      q.run(async () => {
        order.push(i);
        // not a wait: the task's own duration: a task that settles later than it started
        await sleep(1);
        if (i % 2 === 0) throw new Error(String(i));
        return i;
      }),
    );
    const settled = await Promise.allSettled(runs);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(settled.map((s) => s.status)).toEqual([
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
  });

  it("does not start a task whose caller's deadline passed while it waited", async () => {
    const q = new SerialQueue();
    // not a wait: the first task's own duration, past the second's deadline
    const first = q.run(() => sleep(30));
    const caller = new AbortController();
    let started = false;
    const late = q.run(async () => {
      started = true;
    }, caller.signal);
    caller.abort(new TtrpcError("deadline exceeded", Code.DEADLINE_EXCEEDED));
    await first;
    await expect(late).rejects.toMatchObject({ code: Code.DEADLINE_EXCEEDED });
    expect(started).toBe(false);
    // A signal that aborts once its task runs is the task's business.
    const live = new AbortController();
    await expect(
      q.run(async () => {
        live.abort();
        return "done";
      }, live.signal),
    ).resolves.toBe("done");
  });

  it("refuses more than maxWaiting queued tasks with RESOURCE_EXHAUSTED, then takes them again", async () => {
    const q = new SerialQueue(3);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const running = q.run(() => gate);
    await waitFor(() => q.length === 0, { what: "the first task started (no longer waiting)" });
    const queued = [1, 2, 3].map((i) => q.run(async () => i));
    expect(q.length).toBe(3);
    await expect(q.run(async () => 4)).rejects.toMatchObject({ code: Code.RESOURCE_EXHAUSTED });
    release();
    await running;
    expect(await Promise.all(queued)).toEqual([1, 2, 3]);
    expect(q.length).toBe(0);
    await expect(q.run(async () => 5)).resolves.toBe(5);
  });
});
