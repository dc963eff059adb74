/**
 * The policy's phases. Set-up: what the policy allows. Running: only the
 * kinds `phases.running` lists may still change. In front mode the running
 * phase begins `phases.settleMs` after the first successful StartContainer
 * of a workload container (container-watch.ts); that moment is written to
 * the state directory (tmpfs: it outlives the agent, not the VM), so a
 * restarted agent does not return to set-up. Without front mode the phase
 * is `phases.initial`, unless a record says the workload has started.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Phase } from "./check";
import type { Policy } from "./schema";

/** The file in the state directory holding when the workload started (epoch ms). */
export const PHASE_FILE = "policy-phase.json";

export class PhaseClock {
  private startedAt: number | undefined;

  constructor(
    private readonly policy: Policy,
    private readonly stateDir: string | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = stateDir === undefined ? undefined : readStarted(join(stateDir, PHASE_FILE));
  }

  /** The phase now. */
  phase(): Phase {
    if (
      this.startedAt !== undefined &&
      this.now() >= this.startedAt + this.policy.phases.settleMs
    ) {
      return "running";
    }
    return this.policy.phases.initial;
  }

  /** When the workload started (epoch ms), if it has. */
  get workloadStartedAt(): number | undefined {
    return this.startedAt;
  }

  /** The first workload container started: the running phase begins after the settling time. Idempotent. */
  workloadStarted(): boolean {
    if (this.startedAt !== undefined) return false;
    this.startedAt = this.now();
    if (this.stateDir !== undefined) {
      const path = join(this.stateDir, PHASE_FILE);
      const tmp = `${path}.tmp`;
      writeFileSync(tmp, `${JSON.stringify({ workloadStartedAt: this.startedAt })}\n`, {
        mode: 0o600,
      });
      renameSync(tmp, path);
    }
    return true;
  }
}

/**
 * The recorded start. A record that does not parse counts as started now:
 * something wrote there, and the stricter phase is the safe reading.
 */
function readStarted(path: string): number | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const at = (JSON.parse(readFileSync(path, "utf8")) as { workloadStartedAt?: unknown })
      .workloadStartedAt;
    if (typeof at === "number" && Number.isFinite(at)) return at;
  } catch {
    // falls through: unreadable
  }
  return 0;
}
