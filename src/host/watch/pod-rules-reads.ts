/**
 * The packet-filter reads of one followed pod. Its xtables-monitor reports
 * every committed nftables change in the pod's namespace, so the rules read
 * for one sync serve the syncs after it (a route changed, a link came up)
 * until the monitor reports a change: four iptables-save processes fewer
 * for every sync no rule change caused, about a quarter of the processes
 * a pod's read starts.
 *
 * Kept only while that holds: the monitor is the very process that was
 * inside the pod's namespace when the rules were read (a monitor that
 * ended or was restarted may have missed changes), and the pod has no
 * legacy (x_tables) tables, whose changes no monitor reports.
 */
import { readFileSync } from "node:fs";
import type { IpFamily } from "../../net/iptables/iptables-runner";
import { legacyTablesInside, type Rules } from "../pod/iptables-pod";

/** A process's start time (clock ticks after boot), to tell it from a later one with its PID. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

interface Kept {
  rules: Rules;
  /** Changes reported when the read began. */
  changes: number;
  pid: number;
  started: string;
}

export class PodRulesReads {
  private changes = 0;
  private kept: Kept | undefined;

  constructor(
    private readonly netns: string,
    /** The pod's running xtables-monitor, if any. */
    private readonly monitorPid: () => number | undefined,
    private readonly readRules: (
      netns: string,
      opts: { legacyTables?: ReadonlySet<IpFamily> },
    ) => Promise<Rules>,
  ) {}

  /** The monitor reported a change: the next read reads. Called before the sync is asked for. */
  changed(): void {
    this.changes++;
    this.kept = undefined;
  }

  /** The pod's rules: those kept when they still hold, else read (and kept if they may be). */
  async read(): Promise<Rules> {
    const pid = this.monitorPid();
    const started = pid === undefined ? undefined : startTime(pid);
    // Looked at once, for both: whether the kept rules still hold, and which legacy saves run.
    const legacy = pid === undefined ? undefined : legacyTablesInside(this.netns, pid);
    const k = this.kept;
    // Still the same monitor inside the namespace, and still no legacy table there.
    if (
      k &&
      k.changes === this.changes &&
      k.pid === pid &&
      k.started === started &&
      legacy?.size === 0
    )
      return k.rules;
    this.kept = undefined;
    const changes = this.changes;
    const rules = await this.readRules(
      this.netns,
      legacy === undefined ? {} : { legacyTables: legacy },
    );
    // A legacy table made during the read is seen by the next read's look above.
    if (
      pid !== undefined &&
      started !== undefined &&
      legacy?.size === 0 &&
      startTime(pid) === started &&
      changes === this.changes
    )
      this.kept = { rules, changes, pid, started };
    return rules;
  }
}
