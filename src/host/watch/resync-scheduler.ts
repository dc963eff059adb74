/**
 * When `sync --watch` resyncs: a pure state machine (`nextResync`) and a
 * small driver that gives it real timers (`ResyncScheduler`).
 *
 * Invariants: at most one sync in flight; a burst of changes gives one sync
 * once the pod has been quiet for `debounceMs` (or `maxWaitMs` after the
 * burst began, so a pod that never stops changing is still followed);
 * changes during a sync give exactly one more; a failed sync that may
 * succeed later (agent gone, NIC still hot-plugging) is retried with
 * exponential backoff, and changes during the backoff wait for it (the
 * retry resyncs everything anyway); `stop` lets the sync in flight finish.
 */

/** What a sync ended with, as the scheduler needs it. */
export type SyncOutcome = "ok" | "retry" | "failed";

export interface ResyncConfig {
  debounceMs: number;
  maxWaitMs: number;
  /** Backoff after the n-th failure in a row: min(maxMs, baseMs·2^(n-1)) plus [0, baseMs) jitter. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const RESYNC_DEFAULTS: ResyncConfig = {
  debounceMs: 30,
  maxWaitMs: 300,
  backoffBaseMs: 100,
  backoffMaxMs: 5000,
};

export type ResyncPhase = "idle" | "debounce" | "syncing" | "backoff" | "stopped";

export interface ResyncState {
  phase: ResyncPhase;
  /** A change came while syncing: one more sync when it ends. */
  dirty: boolean;
  /** When the burst being debounced began. */
  burstStart: number;
  /** Failed syncs in a row (for the backoff). */
  failures: number;
  /** stop() came while syncing: stop when it ends. */
  stopping: boolean;
}

export type ResyncEvent =
  | { type: "change"; now: number }
  | { type: "timer"; now: number }
  | { type: "done"; outcome: SyncOutcome; now: number }
  | { type: "stop" };

export type ResyncAction =
  | { type: "arm"; ms: number }
  | { type: "disarm" }
  | { type: "sync" }
  | { type: "stopped" };

export const INITIAL_RESYNC: ResyncState = {
  phase: "idle",
  dirty: false,
  burstStart: 0,
  failures: 0,
  stopping: false,
};

/** The backoff before the retry that follows failure number `n` (1-based); `random` in [0, 1). */
export function resyncBackoff(config: ResyncConfig, n: number, random: number): number {
  const exp = Math.min(config.backoffMaxMs, config.backoffBaseMs * 2 ** Math.min(n - 1, 30));
  return exp + Math.floor(random * config.backoffBaseMs);
}

/** Pure: the next state and what the driver must do. `random` feeds the backoff jitter. */
export function nextResync(
  s: ResyncState,
  e: ResyncEvent,
  config: ResyncConfig,
  random = 0,
): { state: ResyncState; actions: ResyncAction[] } {
  if (s.phase === "stopped") return { state: s, actions: [] };
  const debounce = (now: number): { state: ResyncState; actions: ResyncAction[] } => ({
    state: { ...s, phase: "debounce", dirty: false, burstStart: now },
    actions: [{ type: "arm", ms: config.debounceMs }],
  });
  switch (e.type) {
    case "change":
      if (s.phase === "idle") return debounce(e.now);
      if (s.phase === "debounce") {
        // Trailing debounce, but never past maxWaitMs from the burst's start.
        const left = Math.max(0, config.maxWaitMs - (e.now - s.burstStart));
        return { state: s, actions: [{ type: "arm", ms: Math.min(config.debounceMs, left) }] };
      }
      if (s.phase === "syncing") return { state: { ...s, dirty: true }, actions: [] };
      return { state: s, actions: [] }; // backoff: the retry reads the whole pod anyway
    case "timer":
      if (s.phase !== "debounce" && s.phase !== "backoff") return { state: s, actions: [] };
      return { state: { ...s, phase: "syncing", dirty: false }, actions: [{ type: "sync" }] };
    case "done": {
      if (s.phase !== "syncing") return { state: s, actions: [] };
      if (s.stopping) return { state: { ...s, phase: "stopped" }, actions: [{ type: "stopped" }] };
      if (e.outcome === "retry") {
        const failures = s.failures + 1;
        return {
          state: { ...s, phase: "backoff", dirty: false, failures },
          actions: [{ type: "arm", ms: resyncBackoff(config, failures, random) }],
        };
      }
      const failures = e.outcome === "ok" ? 0 : s.failures;
      if (s.dirty) {
        const next = debounce(e.now);
        return { state: { ...next.state, failures }, actions: next.actions };
      }
      return { state: { ...s, phase: "idle", failures }, actions: [] };
    }
    case "stop":
      if (s.phase === "syncing") return { state: { ...s, stopping: true }, actions: [] };
      return {
        state: { ...s, phase: "stopped" },
        actions: [{ type: "disarm" }, { type: "stopped" }],
      };
  }
}

export interface SchedulerHooks {
  now?: () => number;
  random?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
}

/**
 * Runs `sync` as `nextResync` says. `notify()` on every change; `stop()`
 * resolves once no sync is in flight and none will start.
 */
export class ResyncScheduler {
  private state = INITIAL_RESYNC;
  private timer: unknown;
  private readonly stoppedPromise: Promise<void>;
  private resolveStopped: () => void = () => {};
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (handle: unknown) => void;

  constructor(
    private readonly sync: () => Promise<SyncOutcome>,
    private readonly config: ResyncConfig = RESYNC_DEFAULTS,
    hooks: SchedulerHooks = {},
  ) {
    this.now = hooks.now ?? (() => performance.now());
    this.random = hooks.random ?? Math.random;
    this.setTimer = hooks.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = hooks.clearTimer ?? ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.stoppedPromise = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  get phase(): ResyncPhase {
    return this.state.phase;
  }

  notify(): void {
    this.dispatch({ type: "change", now: this.now() });
  }

  stop(): Promise<void> {
    this.dispatch({ type: "stop" });
    return this.stoppedPromise;
  }

  private dispatch(e: ResyncEvent): void {
    const { state, actions } = nextResync(this.state, e, this.config, this.random());
    this.state = state;
    for (const a of actions) {
      if (a.type === "arm" || a.type === "disarm") {
        if (this.timer !== undefined) this.clearTimer(this.timer);
        this.timer = undefined;
      }
      if (a.type === "arm") {
        this.timer = this.setTimer(() => {
          this.timer = undefined;
          this.dispatch({ type: "timer", now: this.now() });
        }, a.ms);
      } else if (a.type === "sync") {
        this.sync().then(
          (outcome) => this.dispatch({ type: "done", outcome, now: this.now() }),
          () => this.dispatch({ type: "done", outcome: "failed", now: this.now() }),
        );
      } else if (a.type === "stopped") {
        this.resolveStopped();
      }
    }
  }
}
