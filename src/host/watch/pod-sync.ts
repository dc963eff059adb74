/**
 * PodSync: the per-pod unit of following one pod into one guest, as
 * `sync --watch` runs it once and `follow` once per sandbox in one process.
 * It owns the agent connection, the resync scheduler and what was last
 * sent; who notices changes (a monitor per pod, or one for the node) calls
 * `notify()`.
 *
 * - Each sync is the one-shot sync (sync-once.ts) of the whole pod; a burst
 *   that leaves what would be sent unchanged costs one read and no call.
 * - A NIC gone from the pod: retire-nics.ts strips its guest twin.
 * - The connection drops (agent restarted, VM paused): noticed at once,
 *   reconnect with backoff, then the whole state is resent.
 * - With `check` (follow): before the first sync the guest is compared with
 *   the pod, and nothing is sent when it is already equal; after each sync
 *   the same comparison says whether the guest now equals the pod.
 * - Every call carries this pod's own deadline: a slow guest delays no other.
 */

import { POLICY_REFUSAL } from "../../agent/policy/gate";
import { AgentClient } from "../../client/client";
import { withStatus } from "../../common/error-status";
import type { State } from "../../gen/network_pb";
import { dial } from "../../transport/dial";
import { Code, codeName, TtrpcError } from "../../ttrpc/codes";
import { departedMacs, retireNics } from "../sync/retire-nics";
import type { PodReport, PodState } from "../sync/sync-once";
import {
  RESYNC_DEFAULTS,
  type ResyncConfig,
  ResyncScheduler,
  type SyncOutcome,
} from "./resync-scheduler";
import {
  checkOutcome,
  type PodCheck,
  packetFilterSummary,
  type RetiredNic,
  type WatchEvent,
} from "./watch-output";

export type { PodCheck };

/** A check's outcome, and the guest's state when the check read it whole (a Get), for the sync after it. */
export type GuestCheck = PodCheck & { guest?: State };

import { diffPodState, type PodSeen, podSeen, samePodState } from "./watch-report";

export interface PodSyncOptions {
  /** For messages: "netns pod1". */
  label: string;
  addr: string;
  timeoutMs: number;
  /** One-shot sync's read of the pod (sync-once.ts). */
  read(): Promise<PodState>;
  /**
   * One-shot sync's drive of the agent (sync-once.ts: Apply when offered,
   * else the Kata calls). `guest`: the state the last Apply read back, when
   * nothing is known to have changed the guest since (syncPod's `guest`).
   */
  drive(client: AgentClient, pod: PodState, guest?: State): Promise<PodReport>;
  emit(event: WatchEvent): void;
  /** True once the pod's namespace is gone (a failed read then ends the watch, not an error). */
  gone(): boolean;
  /** Called when a read failed because the namespace is gone. */
  onGone(): void;
  /**
   * Compares guest and pod completely (follow): before the first sync and
   * after each. `superseded` aborts when the pod changes after this sync
   * began (the check need not wait on what that change explains).
   */
  check?: (
    client: AgentClient,
    pod: PodState,
    when: "before" | "after",
    superseded?: AbortSignal,
  ) => Promise<GuestCheck>;
  resync?: ResyncConfig;
}

/**
 * Errors worth retrying on their own: the agent unreachable or gone, a
 * deadline, a NIC not (yet) in the guest, a pod read that failed. An agent
 * refusing the pod's state (INVALID_ARGUMENT, PERMISSION_DENIED, ...) waits
 * for the pod to change.
 */
function isRetryable(thrown: unknown): boolean {
  const err = withStatus(thrown);
  if (!(err instanceof TtrpcError)) return true;
  return [
    Code.UNAVAILABLE,
    Code.DEADLINE_EXCEEDED,
    Code.NOT_FOUND,
    Code.CANCELLED,
    Code.ABORTED,
  ].includes(err.code);
}

/** Errors after which the connection itself is suspect (not an answer such as NOT_FOUND). */
function isConnectionError(thrown: unknown): boolean {
  const err = withStatus(thrown);
  if (!(err instanceof TtrpcError)) return true;
  return [Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.CANCELLED].includes(err.code);
}

export function describe(thrown: unknown): string {
  const err = withStatus(thrown);
  if (err instanceof TtrpcError) return `${codeName(err.code)}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The guest's network policy refused the call: the rule it names
 * (`policy rule RULE refuses FIELD "VALUE": WHY`), or the whole message when
 * it has another form; undefined for any other error.
 */
function policyRefusal(thrown: unknown): string | undefined {
  const err = withStatus(thrown);
  if (!(err instanceof TtrpcError) || err.code !== Code.PERMISSION_DENIED) return undefined;
  return POLICY_REFUSAL.exec(err.message)?.[1] ?? err.message;
}

/**
 * For an Apply (which can say "down"): the pod's whole state plus each
 * retired NIC the guest still has, listed with no addresses and down
 * (name and MTU kept). The Kata calls ignore `full`.
 */
/** What a resync event says of how its sync went, from the sync's report. */
function howItWent(report: PodReport) {
  return {
    via: report.kind,
    waited:
      report.kind === "kata"
        ? report.sync.interfaces
            .filter((i) => i.attempts > 1)
            .map((i) => ({ name: i.name, attempts: i.attempts }))
        : [],
    guestRoutes:
      report.kind === "kata"
        ? report.sync.routes.length
        : (report.apply.result?.routes.length ?? 0),
    packetFilter: packetFilterSummary(report.rules),
    notMirrored: report.kind === "apply" ? report.apply.notMirrored : [],
  };
}

function withRetired(pod: PodState, retired: readonly RetiredNic[]): PodState {
  const gone = retired.filter((r) => r.found);
  if (!pod.full || gone.length === 0) return pod;
  const links = gone.map((r) => ({
    index: -1,
    name: "",
    mac: r.hwAddr,
    mtu: 0,
    flags: [],
    kind: "",
    addresses: [],
  }));
  return { ...pod, full: { ...pod.full, links: [...pod.full.links, ...links] } };
}

const at = () => new Date().toISOString();

/** A check's outcome as events print it. */
function withoutGuest(c: GuestCheck): PodCheck {
  const { guest: _, ...check } = c;
  return check;
}

export class PodSync {
  private client: AgentClient | undefined;
  /** A connection was lost since the last successful sync. */
  private lost = false;
  /**
   * The last sync failed: the next change syncs whatever the pod reads (a
   * pod changed back to what was last sent is still a change to act on,
   * so the failure's state is left for a fresh outcome).
   */
  private failedLast = false;
  /** What was last sent, as digests (watch-report.ts). */
  private last: PodSeen | undefined;
  /** What the last Apply read back, kept while its sync stands (the next sync's Get saved). */
  private readBack: State | undefined;
  private tracked = new Set<string>();
  private seq = 0;
  private trigger: Record<string, number> = {};
  /** The sync in flight's: aborted by a change in the pod meanwhile. */
  private changed: AbortController | undefined;
  /**
   * The last sync's check was cut short by a change (superseded). The next
   * check is then not cut short: a pod that changes during every check
   * (neighbour churn) beside a difference no sync fixes is checked with its
   * pauses at least every other sync, not re-synced as fast as checks end.
   */
  private cutShort = false;
  private stopping = false;
  private readonly scheduler: ResyncScheduler;
  resyncs = 0;
  unchanged = 0;
  failures = 0;

  constructor(private readonly o: PodSyncOptions) {
    this.scheduler = new ResyncScheduler(() => this.runSync(), o.resync ?? RESYNC_DEFAULTS);
  }

  /** A change was seen (`kind` counts it in the next sync's trigger). */
  notify(kind?: string): void {
    if (kind) this.trigger[kind] = (this.trigger[kind] ?? 0) + 1;
    this.changed?.abort();
    this.scheduler.notify();
  }

  /**
   * Stops: the sync in flight may finish for `graceMs`, then its calls are
   * cancelled (the connection closed); resolves once no sync runs.
   */
  async stop(graceMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopping = true;
    const stopped = this.scheduler.stop();
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (Number.isFinite(graceMs)) {
      timer = setTimeout(() => this.client?.close(), graceMs);
    }
    await stopped;
    clearTimeout(timer);
    this.client?.close();
  }

  private async connect(): Promise<AgentClient> {
    const socket = await dial(this.o.addr, this.o.timeoutMs);
    const c = new AgentClient(socket);
    socket.on("close", () => {
      if (this.client !== c || this.stopping) return;
      // Agent restarted or the connection dropped while idle: resync now.
      this.client = undefined;
      this.lost = true;
      this.scheduler.notify();
    });
    return c;
  }

  private async runSync(): Promise<SyncOutcome> {
    const changed = new AbortController();
    this.changed = changed;
    try {
      return await this.syncOnce(changed.signal);
    } finally {
      if (this.changed === changed) this.changed = undefined;
    }
  }

  private async syncOnce(superseded: AbortSignal): Promise<SyncOutcome> {
    const t0 = performance.now();
    const cause = this.trigger;
    this.trigger = {};
    const seq = ++this.seq;
    const elapsed = () => Math.round((performance.now() - t0) * 10) / 10;
    let pod: PodState;
    try {
      pod = await this.o.read();
    } catch (err) {
      if (this.o.gone()) {
        this.o.onGone();
        return "ok";
      }
      this.failures++;
      const message = `reading ${this.o.label}: ${describe(err)}`;
      this.o.emit({ event: "error", at: at(), seq, ms: elapsed(), message, retry: true });
      return "retry";
    }
    const seen = podSeen(pod);
    if (
      this.last &&
      !this.lost &&
      !this.failedLast &&
      this.client &&
      samePodState(this.last, seen)
    ) {
      this.unchanged++;
      this.seq--;
      return "ok";
    }
    try {
      const reconnected = this.lost;
      if (!this.client || this.client.closed) this.client = await this.connect();
      const client = this.client;
      const initial = this.last === undefined && !reconnected;
      let fresh: State | undefined;
      if (initial && this.o.check) {
        // Follow restarted (or a guest synced before): send nothing to a guest already equal.
        const before = await this.o.check(client, pod, "before");
        if ("differences" in before && before.differences.length === 0) {
          this.o.emit({
            event: "checked",
            at: at(),
            seq,
            ms: elapsed(),
            equal: true,
            differences: [],
          });
          this.accept(pod, seen);
          return "ok";
        }
        fresh = before.guest;
      }
      const requests = pod.requests;
      const retired = await retireNics(
        client,
        departedMacs(this.tracked, requests),
        this.o.timeoutMs,
      );
      const known =
        retired.length > 0 ? undefined : (fresh ?? (reconnected ? undefined : this.readBack));
      this.readBack = undefined;
      const report = await this.o.drive(client, withRetired(pod, retired), known);
      const viaApply = report.kind === "apply";
      for (const r of retired) r.down = viaApply && r.found;
      const mayCut = !this.cutShort;
      this.cutShort = false;
      const verified = this.o.check
        ? withoutGuest(await this.o.check(client, pod, "after", mayCut ? superseded : undefined))
        : undefined;
      this.resyncs++;
      this.o.emit({
        event: "resync",
        at: at(),
        seq,
        ms: elapsed(),
        initial,
        trigger: cause,
        reconnected,
        changes: diffPodState(this.last, seen),
        retired,
        interfaces: requests.interfaces.length,
        routes: requests.routes.length,
        neighbors: requests.neighbors.length,
        ...howItWent(report),
        ...(verified ? { verified } : {}),
      });
      this.accept(pod, seen);
      const outcome = checkOutcome(verified);
      const equal = outcome === "equal";
      // Kept only when a complete check found the guest equal to it (follow).
      if (verified !== undefined && equal && report.kind === "apply")
        this.readBack = report.apply.result;
      if (!equal) {
        this.failedLast = true;
        // Superseded: the change that came meanwhile has its sync due already.
        if (outcome === "superseded") {
          this.cutShort = true;
          return "ok";
        }
        return "failed"; // not equal after a sync: waits for the pod's next change
      }
      return "ok";
    } catch (err) {
      return this.syncFailed(err, seq, elapsed());
    }
  }

  /** A sync that threw: said, and retried when the error may pass by itself. */
  private syncFailed(err: unknown, seq: number, ms: number): SyncOutcome {
    this.failures++;
    this.failedLast = true;
    const retry = isRetryable(err);
    if (retry && this.client && isConnectionError(err)) {
      // Start from a fresh connection: the old one may be half dead.
      const c = this.client;
      this.client = undefined;
      c.close();
      this.lost = true;
    }
    const refusedBy = policyRefusal(err);
    this.o.emit({
      event: "error",
      at: at(),
      seq,
      ms,
      message: describe(err),
      retry,
      ...(refusedBy !== undefined ? { policy: refusedBy } : {}),
    });
    return retry ? "retry" : "failed";
  }

  /** `pod` (kept as `seen`) is what the guest now holds. */
  private accept(pod: PodState, seen: PodSeen): void {
    this.last = seen;
    this.readBack = undefined;
    this.lost = false;
    this.failedLast = false;
    this.tracked = new Set(pod.requests.interfaces.map((i) => i.hwAddr.toLowerCase()));
  }
}
