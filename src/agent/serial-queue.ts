/**
 * Runs tasks one at a time, in arrival order. A failed task does not stop
 * the queue (it is a queue, not a lock a failed call could leave held).
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => {});
    return result;
  }
}
