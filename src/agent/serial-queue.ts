/**
 * Runs tasks one at a time, in arrival order. A failed task does not stop
 * the queue (it is a queue, not a lock a failed call could leave held).
 * Bounded: at most `maxWaiting` tasks wait; more are refused with
 * RESOURCE_EXHAUSTED. A task whose caller gave up (its signal aborted,
 * e.g. on the deadline) while it waited is not started.
 */
import { Code, TtrpcError } from "../ttrpc/codes";
import { MAX_QUEUED_WRITES } from "./limits";

export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(private readonly maxWaiting = MAX_QUEUED_WRITES) {}

  /** Tasks queued and not yet started. */
  get length(): number {
    return this.waiting;
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
    const start = () => {
      this.waiting--;
      if (signal?.aborted) throw signal.reason ?? new TtrpcError("cancelled", Code.CANCELLED);
      return task();
    };
    const result = this.tail.then(start, start);
    this.tail = result.catch(() => {});
    return result;
  }
}
