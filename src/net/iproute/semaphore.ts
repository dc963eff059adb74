/**
 * A counting semaphore: at most `size` tasks run at once, the rest wait in
 * arrival order. Used to bound concurrent child processes (each `ip` is a
 * process, its memory and a pid: without a bound, pipelined reads start
 * as many as there are reads).
 */
export class Semaphore {
  private running = 0;
  private readonly waiters: (() => void)[] = [];
  private peak = 0;

  constructor(readonly size: number) {
    if (!(size >= 1)) throw new RangeError(`semaphore size ${size}: must be at least 1`);
  }

  /** Tasks running now. */
  get active(): number {
    return this.running;
  }

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Most tasks ever running at once. */
  get highWater(): number {
    return this.peak;
  }

  /** Runs `task` once a slot is free; the slot is freed when it settles. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    } else {
      this.running++;
    }
    this.peak = Math.max(this.peak, this.running);
    try {
      return await task();
    } finally {
      const next = this.waiters.shift();
      // The slot passes straight to the next waiter: `running` stays.
      if (next) next();
      else this.running--;
    }
  }
}
