/**
 * A call's cancellation, made on demand: an AbortController is a large part
 * of a Check's cost (bench/README.md), and most calls (Check, reads) never
 * look at their signal. This one creates it only when a handler asks,
 * already aborted when cancellation came first.
 */
export class CallAbort {
  private controller: AbortController | undefined;
  private reason: unknown;
  private abortedEarly = false;

  /** The call's signal; the same object on every read. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.abortedEarly) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Aborts the signal with `reason` (the first reason wins, as with AbortController). */
  abort(reason: unknown): void {
    if (this.controller !== undefined) {
      this.controller.abort(reason);
    } else if (!this.abortedEarly) {
      this.abortedEarly = true;
      this.reason = reason;
    }
  }
}
