/**
 * Runs tasks one at a time, in arrival order. A failed task does not stop
 * the queue (it is a queue, not a lock a failed call could leave held).
 * Bounded: at most `maxWaiting` tasks wait; more are refused with
 * RESOURCE_EXHAUSTED. A task whose caller gave up (its signal aborted,
 * e.g. on the deadline) while it waited is not started.
 *
 * Every network change runs here, so the change journal hangs here too: a
 * task calls {@link SerialQueue.record} before its first change, and the
 * record is removed when the task ends, complete or rolled back
 * (journal.ts). A task that records nothing costs nothing.
 */

import { MAX_QUEUED_WRITES } from "../../common/limits";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { Change } from "../journal/change-record";

/** Where the queue's tasks record their changes (the agent's Journal). */
export interface ChangeJournal {
  write(change: Change): void;
  clear(): void;
}

export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;
  /** The running task wrote a record. */
  private recorded = false;

  constructor(
    private readonly maxWaiting = MAX_QUEUED_WRITES,
    private readonly journal?: ChangeJournal,
  ) {}

  /** Tasks queued and not yet started. */
  get length(): number {
    return this.waiting;
  }

  /**
   * Records, for the running task, what puts the old state back should the
   * agent die before the task ends. Call it before the first change; `change`
   * is built only when there is a journal. Throws (RESOURCE_EXHAUSTED,
   * UNAVAILABLE) when the record cannot be written: nothing is changed then.
   */
  record(change: () => Change): void {
    if (this.journal === undefined) return;
    this.journal.write(change());
    this.recorded = true;
  }

  /**
   * Runs `task` after every task queued before it. Rejects with
   * RESOURCE_EXHAUSTED when the queue is full, and with the signal's reason
   * when `signal` aborted before the task's turn came.
   */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.waiting >= this.maxWaiting) {
      return Promise.reject(
        new TtrpcError(
          `too many changes waiting (the agent's limit is ${this.maxWaiting}): try again later`,
          Code.RESOURCE_EXHAUSTED,
        ),
      );
    }
    this.waiting++;
    const start = async () => {
      this.waiting--;
      if (signal?.aborted) throw signal.reason ?? new TtrpcError("cancelled", Code.CANCELLED);
      try {
        return await task();
      } finally {
        if (this.recorded) {
          this.recorded = false;
          this.journal?.clear();
        }
      }
    };
    const result = this.tail.then(start, start);
    this.tail = result.catch(() => {});
    return result;
  }
}
