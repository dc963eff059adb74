/**
 * One Kata sandbox as `follow` keeps it: its directory watched (inotify,
 * through fs.watch) so each write of its files is read again; once both
 * ends are known (sandbox-resolve.ts) a PodSync unit keeps the guest equal
 * to the pod, fed by the node's change monitor and the pod's own
 * xtables-monitor; when the netns is deleted, everything started for it
 * stops (the directory stays watched in case the sandbox comes back).
 *
 * States: `waiting` (files or fields not there yet), `syncing` (a sync or
 * its retry in progress), `equal` (the last complete comparison found no
 * difference), `failed` (with the reason; a failed sync is not retried
 * until the pod changes; a state file that does not parse for
 * {@link UNPARSED_LIMIT_MS} after its first failed read).
 */
import { type FSWatcher, watch } from "node:fs";
import type { Semaphore } from "../../net/iproute/semaphore";
import { readPodRules } from "../pod/iptables-pod";
import { readPodBoth, readPodRequests } from "../pod/pod-requests";
import { readPodState, syncPod } from "../sync/sync-once";
import { NetnsGoneWatcher } from "../watch/netns-gone";
import { PodMonitor } from "../watch/pod-monitor";
import { PodRulesReads } from "../watch/pod-rules-reads";
import { describe, PodSync } from "../watch/pod-sync";
import type { ResyncConfig } from "../watch/resync-scheduler";
import { xtablesMonitorTool } from "../watch/rules-monitor";
import { checkOutcome, type WatchEvent } from "../watch/watch-output";
import type { FollowEvent, SandboxState } from "./follow-output";
import { checkGuest } from "./guest-check";
import { NetnsDirectory } from "./netns-directory";
import type { NodeMonitor, Subscription } from "./node-monitor";
import { podNetns, type Resolution, resolveSandbox } from "./sandbox-resolve";
import type { SyncsFirst } from "./syncs-first";

/** A state file that does not parse for this long after its first failed read fails the sandbox. */
const UNPARSED_LIMIT_MS = 3000;

/** What /sandboxes says of a sandbox. */
export interface SandboxView {
  id: string;
  netns: string | null;
  addr: string | null;
  state: SandboxState;
  lastSync: string | null;
  lastError: string | null;
  syncs: number;
}

export interface SandboxDeps {
  monitor: NodeMonitor;
  emit(e: FollowEvent): void;
  timeoutMs: number;
  resync: ResyncConfig;
  /** Local reads of pods for syncs (ip, iptables-save, /proc/sys), node-wide. */
  reads: Semaphore;
  /** Complete comparisons, node-wide (apart, so a check never delays a sync). */
  checks: Semaphore;
  /** Comparisons wait for the node's syncs (syncs-first.ts). */
  syncsFirst: SyncsFirst;
  /** The node's one watch of the namespace directories. */
  netnsDir: NetnsDirectory;
  /** A change noticed in a pod became an equal guest after `ms`. */
  changeToEqual(ms: number): void;
}

interface Running {
  unit: PodSync;
  netns: string;
  addr: string;
  subscription: Subscription;
  filter: PodMonitor;
  /** Stops noticing the netns's deletion. */
  unwatch: () => void;
}

const at = () => new Date().toISOString();

export class Sandbox {
  state: SandboxState = "waiting";
  lastError: string | null = null;
  lastSync: string | null = null;
  syncs = 0;
  failures = 0;
  private running: Running | undefined;
  private watcher: FSWatcher | undefined;
  private shimUrl: string | undefined;
  private unparsedSince: number | undefined;
  private unparsedTimer: ReturnType<typeof setTimeout> | undefined;
  private evaluating: Promise<void> | undefined;
  private again = false;
  private closed = false;
  /** When the first change since the guest was last equal was noticed. */
  private changedAt: number | undefined;

  constructor(
    readonly id: string,
    readonly dir: string,
    private readonly root: string,
    private readonly deps: SandboxDeps,
  ) {}

  view(): SandboxView {
    return {
      id: this.id,
      netns: this.running?.netns ?? null,
      addr: this.running?.addr ?? null,
      state: this.state,
      lastSync: this.lastSync,
      lastError: this.lastError,
      syncs: this.syncs,
    };
  }

  /** The entry cannot be a sandbox (a symlink out of the root): failed, and nothing is read. */
  refuse(reason: string): void {
    this.closed = true;
    this.set("failed", reason);
  }

  /** Says the sandbox went away (after close). */
  dropped(why: string): void {
    this.life("dropped", why);
  }

  /** Watches the directory and reads it a first time. */
  start(): void {
    try {
      this.watcher = watch(this.dir, { persistent: false }, () => this.reevaluate());
      this.watcher.on("error", () => {});
    } catch (err) {
      this.set("failed", `cannot watch ${this.dir}: ${(err as Error).message}`);
      return;
    }
    this.life("waiting", `found in ${this.dir}`);
    this.reevaluate();
  }

  private life(state: SandboxState | "dropped", detail: string): void {
    this.deps.emit({ sandbox: this.id, event: "sandbox", at: at(), state, detail });
  }

  private set(state: SandboxState, error: string | null, announce = true): void {
    const changed = state !== this.state || error !== this.lastError;
    this.state = state;
    this.lastError = error;
    if (changed && announce && (state === "failed" || state === "waiting")) {
      this.life(state, error ?? "");
    }
  }

  /** Reads the directory again (coalesced: one evaluation at a time, one more if asked meanwhile). */
  reevaluate(): void {
    if (this.closed) return;
    if (this.evaluating) {
      this.again = true;
      return;
    }
    this.evaluating = this.evaluate()
      .catch((err) => this.set("failed", `reading ${this.dir}: ${describe(err)}`))
      .finally(() => {
        this.evaluating = undefined;
        if (this.again) {
          this.again = false;
          this.reevaluate();
        }
      });
  }

  private async evaluate(): Promise<void> {
    const r = await resolveSandbox(this.root, this.dir, this.running ? this.shimUrl : undefined);
    if (this.closed) return;
    if (r.kind === "unparsed") return this.unparsed(r.why);
    this.unparsedSince = undefined;
    clearTimeout(this.unparsedTimer);
    if (r.kind !== "ready") {
      // A running unit keeps its ends: a file rewritten badly says nothing of the pod.
      if (this.running) return;
      return this.set(r.kind === "waiting" ? "waiting" : "failed", r.why);
    }
    this.shimUrl = r.shimUrl;
    const run = this.running;
    if (run && run.netns === r.netns && run.addr === r.addr) return;
    if (run) {
      await this.stopUnit(0);
      this.life("syncing", `its ends changed (netns ${r.netns}, agent ${r.addr})`);
    }
    await this.startUnit(r);
  }

  private unparsed(why: string): void {
    const now = performance.now();
    this.unparsedSince ??= now;
    clearTimeout(this.unparsedTimer);
    const left = UNPARSED_LIMIT_MS - (now - this.unparsedSince);
    if (left <= 0) {
      if (!this.running) this.set("failed", `${why} (for ${UNPARSED_LIMIT_MS / 1000} s)`);
      return;
    }
    // Read again at the next write; if none comes, this decides.
    this.unparsedTimer = setTimeout(() => this.reevaluate(), left + 10);
  }

  private async startUnit(r: Extract<Resolution, { kind: "ready" }>): Promise<void> {
    const identity = NetnsDirectory.identity(r.netns);
    const onGone = () => void this.dropUnit("its network namespace was deleted");
    const netns = podNetns(r.netns);
    const label = `netns ${r.netns}`;
    const emit = (e: WatchEvent) => this.onEvent(e);
    let filter: PodMonitor | undefined;
    const rules = new PodRulesReads(netns, () => filter?.pid, readPodRules);
    const unit = new PodSync({
      label,
      addr: r.addr,
      timeoutMs: this.deps.timeoutMs,
      resync: this.deps.resync,
      read: () =>
        this.deps.syncsFirst.sync(() =>
          this.deps.reads.run(() =>
            readPodState(
              {
                netns,
                read: () => readPodRequests(netns),
                readBoth: () => readPodBoth(netns),
                readRules: () => rules.read(),
              },
              { full: true },
            ),
          ),
        ),
      drive: (client, pod, guest) =>
        this.deps.syncsFirst.sync(() =>
          syncPod(client, pod, { timeoutMs: this.deps.timeoutMs, ...(guest ? { guest } : {}) }),
        ),
      check: (client, pod, when, superseded) =>
        checkGuest(
          client,
          pod,
          {
            netns,
            label,
            timeoutMs: this.deps.timeoutMs,
            settle: when === "after",
            ...(superseded ? { superseded } : {}),
          },
          async (read) => {
            await this.deps.syncsFirst.quiet();
            return this.deps.checks.run(read);
          },
        ),
      emit,
      gone: () => NetnsDirectory.gone(r.netns, identity),
      onGone,
    });
    const onChange = (kind: string) => {
      if (this.state === "equal" || this.changedAt === undefined)
        this.changedAt ??= performance.now();
      unit.notify(kind);
    };
    filter = new PodMonitor(xtablesMonitorTool(netns), {
      onEvent: (kind) => {
        rules.changed();
        onChange(kind);
      },
      onExit: () => {},
    });
    // Listen first, then read: a change after the first read cannot be missed.
    const subscription = await this.deps.monitor.subscribe(netns, onChange);
    try {
      await filter.start();
    } catch (err) {
      emit({
        event: "warning",
        at: at(),
        message: `packet filter changes not followed (${describe(err)}); rules are still read with every sync, and sent where they differ`,
      });
    }
    if (this.closed) {
      subscription.stop();
      filter.stop();
      return;
    }
    const unwatch = this.watchNetns(r.netns, onGone);
    this.running = { unit, netns: r.netns, addr: r.addr, subscription, filter, unwatch };
    this.set("syncing", null, false);
    this.life(
      "syncing",
      `netns ${r.netns}, agent ${r.addr} (from ${r.addrFrom}); changes by ${subscription.how}`,
    );
    this.changedAt = performance.now();
    unit.notify();
  }

  /** Calls `onGone` once the netns is deleted: through the node's shared directory watch, or (a /proc path) a watcher of its own. */
  private watchNetns(file: string, onGone: () => void): () => void {
    if (NetnsDirectory.handles(file)) return this.deps.netnsDir.follow(file, onGone);
    const w = new NetnsGoneWatcher(file, onGone);
    w.start();
    return () => w.close();
  }

  /** The unit's events: printed, and the sandbox's state follows them. */
  private onEvent(e: WatchEvent): void {
    this.deps.emit({ sandbox: this.id, ...e });
    if (e.event === "checked" && e.equal) this.becameEqual(e.at);
    else if (e.event === "resync") {
      this.syncs++;
      const v = e.verified;
      const outcome = checkOutcome(v);
      if (v === undefined || outcome === "equal") this.becameEqual(e.at);
      else if (outcome === "superseded") {
        // Not a failure: the pod changed meanwhile, and the next sync is already due.
        this.set("syncing", null, false);
      } else {
        this.failures++;
        const why =
          "unchecked" in v
            ? `synced, not verified: ${v.unchecked}`
            : `still different: ${v.differences.join("; ")}`;
        this.set("failed", why, false);
      }
    } else if (e.event === "error") {
      this.failures++;
      const why =
        e.policy !== undefined ? `refused by policy: ${e.policy} (${e.message})` : e.message;
      this.set(e.retry ? "syncing" : "failed", why, false);
    }
  }

  private becameEqual(when: string): void {
    this.lastSync = when;
    this.set("equal", null, false);
    if (this.changedAt !== undefined) this.deps.changeToEqual(performance.now() - this.changedAt);
    this.changedAt = undefined;
  }

  private async dropUnit(why: string): Promise<void> {
    if (!this.running) return;
    await this.stopUnit(0);
    this.set("waiting", why, false);
    this.life("dropped", why);
  }

  private async stopUnit(graceMs: number): Promise<void> {
    const run = this.running;
    if (!run) return;
    this.running = undefined;
    run.subscription.stop();
    run.filter.stop();
    run.unwatch();
    await run.unit.stop(graceMs);
  }

  /** Stops everything started for this sandbox; calls in flight get `graceMs`, then are cancelled. */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    clearTimeout(this.unparsedTimer);
    this.watcher?.close();
    await this.stopUnit(graceMs);
  }

  /** True while a unit follows this sandbox. */
  get active(): boolean {
    return this.running !== undefined;
  }

  /** PIDs started for this sandbox (its xtables-monitor). */
  pids(): number[] {
    const pid = this.running?.filter.pid;
    return pid === undefined ? [] : [pid];
  }
}
