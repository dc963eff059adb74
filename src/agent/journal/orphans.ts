/**
 * The processes a dead agent left running: its `ip -batch` children (the
 * resident one and one-shot runs) and iptables tools go on after it dies,
 * reading what was already in their pipes. A restore must not race them, so
 * a starting agent that finds a change record first waits for them, bounded,
 * then kills what is left.
 *
 * They are found by process group: the agent leads its own
 * (process-group.ts), so everything it started is in the group whose id is
 * its PID, which the record names. A PID is never handed out while a group
 * of that id has members, and each one is checked again by its start time
 * before it is signalled, so only those processes are ever killed.
 */

import type { Logger } from "../../common/log";
import type { RecordOwner } from "./change-record";
import { type ProcStat, processesInGroup, stillRunning } from "./proc-stat";

export interface OrphanReport {
  /** What was running when the agent started: `comm` and PID. */
  found: { pid: number; comm: string }[];
  /** Those still running after the wait, killed with SIGKILL. */
  killed: number[];
}

const POLL_MS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits up to `waitMs` for the processes of `owner`'s group to end, then
 * kills the rest by PID and waits (again up to `waitMs`) until they are gone.
 */
export async function awaitOrphans(
  owner: RecordOwner,
  log: Logger,
  waitMs: number,
): Promise<OrphanReport> {
  const pgid = owner.pgid;
  if (pgid === undefined) {
    log.warn("the agent that died led no process group: processes it left cannot be waited for", {
      pid: owner.pid,
    });
    return { found: [], killed: [] };
  }
  // Our own group is ours: had the old one any member, its id could not be our PID.
  if (pgid === process.pid) return { found: [], killed: [] };
  const left = processesInGroup(pgid).filter(
    (p) => p.pid !== process.pid && p.start >= owner.start && p.state !== "Z",
  );
  const report: OrphanReport = {
    found: left.map((p) => ({ pid: p.pid, comm: p.comm })),
    killed: [],
  };
  if (left.length === 0) return report;
  log.info("waiting for the processes the dead agent left", { processes: report.found });
  let running = await waitGone(left, waitMs);
  for (const p of running) {
    // Checked again just before: the same PID and start time, so the same process.
    if (!stillRunning(p.pid, p.start)) continue;
    try {
      process.kill(p.pid, "SIGKILL");
      report.killed.push(p.pid);
    } catch {
      // Gone meanwhile.
    }
  }
  if (report.killed.length > 0) {
    log.warn("killed processes the dead agent left", { pids: report.killed, afterMs: waitMs });
    running = await waitGone(running, waitMs);
    if (running.length > 0) {
      log.error("processes the dead agent left outlived SIGKILL", {
        pids: running.map((p) => p.pid),
      });
    }
  }
  return report;
}

/** Polls until none of `procs` runs or `ms` pass; answers those still running. */
async function waitGone(procs: readonly ProcStat[], ms: number): Promise<ProcStat[]> {
  const until = performance.now() + ms;
  let running = procs.filter((p) => stillRunning(p.pid, p.start));
  while (running.length > 0 && performance.now() < until) {
    await sleep(POLL_MS);
    running = running.filter((p) => stillRunning(p.pid, p.start));
  }
  return running;
}
