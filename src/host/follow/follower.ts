/**
 * The node follower: every sandbox directory under the Kata roots, each
 * kept by a Sandbox (sandbox.ts) in this one process, all fed by one change
 * monitor for the node (node-monitor.ts). Sandboxes appear and go with
 * their directories (root-watch.ts). `stop()` gives calls in flight a grace
 * period, then cancels them, and leaves no process behind.
 *
 * Bounds: local reads of pods (ip, iptables-save, /proc/sys/net) run at
 * most {@link POD_READS_AT_ONCE} at a time node-wide, so 40 sandboxes
 * starting together do not fork 40 readers at once; the complete
 * comparisons that follow syncs take their own {@link CHECKS_AT_ONCE}
 * slots, so checking one guest never delays another's sync, and wait while
 * any sync runs (syncs-first.ts). Calls to
 * guests are not queued behind each other (each has its own deadline).
 */
import { Semaphore } from "../../net/iproute/semaphore";
import { RESYNC_DEFAULTS, type ResyncConfig } from "../watch/resync-scheduler";
import type { FollowEvent, NodeEvent } from "./follow-output";
import { NetnsDirectory } from "./netns-directory";
import { NodeMonitor } from "./node-monitor";
import { type RootListing, RootWatcher } from "./root-watch";
import { Sandbox, type SandboxView } from "./sandbox";
import { SyncsFirst } from "./syncs-first";

export const DEFAULT_ROOTS: readonly string[] = ["/run/vc/sbs", "/run/kata"];
const POD_READS_AT_ONCE = 4;
/** Complete comparisons (the check that makes a sandbox `equal`) at once, apart from sync reads. */
const CHECKS_AT_ONCE = 2;
/**
 * A full garbage collection this long after the last sandbox event: a
 * burst of syncs leaves its reads' garbage behind, and an idle follower
 * should hold only what it keeps (measured in bench/README.md).
 */
const QUIET_GC_MS = 1500;

/**
 * The follower's retry: as `sync --watch`'s, but the backoff stops growing
 * at 1 s, so an agent back from a restart is re-synced about 1 s after its
 * first answer at most (a dead guest costs one connect attempt a second).
 */
const FOLLOW_RESYNC: ResyncConfig = { ...RESYNC_DEFAULTS, backoffMaxMs: 1000 };

export interface FollowOptions {
  roots: readonly string[];
  timeoutMs: number;
  resync?: ResyncConfig;
  monitor?: "all-nsid" | "per-netns";
  emit(e: FollowEvent | NodeEvent): void;
  /** Sandbox events also go here (metrics). */
  observe?: {
    event(e: FollowEvent): void;
    changeToEqual(ms: number): void;
    dropped(id: string): void;
  };
}

export class Follower {
  /** By the sandbox directory's path; with the root (as given) it was found in. */
  private readonly sandboxes = new Map<string, { sb: Sandbox; root: string }>();
  private readonly watchers: RootWatcher[] = [];
  readonly monitor: NodeMonitor;
  private readonly reads = new Semaphore(POD_READS_AT_ONCE);
  private readonly checks = new Semaphore(CHECKS_AT_ONCE);
  private readonly syncsFirst = new SyncsFirst();
  private readonly netnsDir = new NetnsDirectory();
  private stopping = false;
  private gcTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly o: FollowOptions) {
    this.monitor = new NodeMonitor((m) => this.note(m), o.monitor ?? "all-nsid");
  }

  private note(detail: string): void {
    this.o.emit({ event: "follow", at: new Date().toISOString(), detail });
  }

  /** Starts the change monitor, then the roots (sandboxes found start as they are read). */
  async start(): Promise<void> {
    await this.monitor.start();
    for (const root of this.o.roots) {
      const w = new RootWatcher(
        root,
        (l) => this.onListing(root, l),
        (m) => this.note(m),
      );
      this.watchers.push(w);
      w.start();
    }
  }

  private onListing(root: string, listing: RootListing): void {
    if (this.stopping) return;
    const seen = new Set<string>();
    if (listing.real !== undefined) {
      for (const [id, entry] of listing.entries) {
        const key = `${listing.real}/${id}`;
        seen.add(key);
        if (this.sandboxes.has(key)) continue;
        const sb = new Sandbox(id, entry.dir, listing.real, {
          monitor: this.monitor,
          emit: (e) => {
            this.o.emit(e);
            this.o.observe?.event(e);
            this.quietGc();
          },
          timeoutMs: this.o.timeoutMs,
          resync: this.o.resync ?? FOLLOW_RESYNC,
          reads: this.reads,
          checks: this.checks,
          syncsFirst: this.syncsFirst,
          netnsDir: this.netnsDir,
          changeToEqual: (ms) => this.o.observe?.changeToEqual(ms),
        });
        this.sandboxes.set(key, { sb, root });
        if (entry.refused !== undefined) sb.refuse(entry.refused);
        else sb.start();
      }
    }
    for (const [key, { sb, root: from }] of this.sandboxes) {
      if (from !== root || seen.has(key)) continue;
      this.sandboxes.delete(key);
      void sb.close(0).then(() => {
        sb.dropped("its directory was removed");
        this.o.observe?.dropped(sb.id);
      });
    }
  }

  private quietGc(): void {
    clearTimeout(this.gcTimer);
    this.gcTimer = setTimeout(() => Bun.gc(true), QUIET_GC_MS);
    this.gcTimer.unref();
  }

  /** What /sandboxes answers, in id order. */
  list(): SandboxView[] {
    return [...this.sandboxes.values()]
      .map((s) => s.sb.view())
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The processes this follower started and are running now. */
  childPids(): number[] {
    const own = this.monitor.pid === undefined ? [] : [this.monitor.pid];
    return [...own, ...[...this.sandboxes.values()].flatMap((s) => s.sb.pids())];
  }

  /** Stops everything: calls in flight get `graceMs`, then are cancelled. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.gcTimer);
    for (const w of this.watchers) w.close();
    await Promise.all([...this.sandboxes.values()].map((s) => s.sb.close(graceMs)));
    this.monitor.stop();
    this.netnsDir.close();
  }
}
