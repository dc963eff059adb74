/**
 * What a starting agent does before it serves: when the last agent died in
 * the middle of a network change (its record still in the journal), wait
 * for the processes it left, then put back the state from before that
 * change with the same restore a failed call runs, then remove the record.
 * The log says what was found and what was restored.
 *
 * Never a loop: a record is tried by at most {@link MAX_RESTORE_ATTEMPTS}
 * starts (an agent killed while restoring leaves it for the next), and a
 * restore that runs to its end but cannot finish sets the record aside; the
 * agent then serves anyway, says so at error level, and counts it
 * (netagent_rollbacks_total{result="incomplete"}). Check stays SERVING: the
 * network calls still work, and the next change plans from what it reads.
 */

import { MAX_RESTORE_ATTEMPTS, ORPHAN_WAIT_MS } from "../../common/limits";
import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { IptablesRunner } from "../../net/iptables/iptables-runner";
import type { SysctlFs } from "../../net/sysctl/sysctl-fs";
import { restoreLink } from "../apply/apply-link";
import { restoreRoutes, restoreTouchedRoutes } from "../apply/apply-routes";
import { restoreState } from "../apply/apply-state";
import { restoreNeighbours } from "../apply/restore-neighbors";
import { noteRollback } from "../apply/rollbacks";
import type { Change, ChangeRecord } from "./change-record";
import type { Journal } from "./journal";
import { awaitOrphans } from "./orphans";

export interface RecoverOptions {
  journal: Journal;
  log: Logger;
  ip: IpRunner;
  sysctl: SysctlFs;
  iptables: IptablesRunner;
  orphanWaitMs?: number;
}

/** What the start found and did, for the caller and tests. */
export type Recovery =
  | { kind: "none" | "set-aside" | "left" }
  | { kind: "restored" | "incomplete"; change: Change["kind"] };

export async function recoverAtStart(options: RecoverOptions): Promise<Recovery> {
  const { journal, log } = options;
  const found = journal.find();
  switch (found.kind) {
    case "none":
      return { kind: "none" };
    case "set-aside":
      log.error("change record set aside, not applied", {
        reason: found.reason,
        path: journal.rejectedPath,
      });
      return { kind: "set-aside" };
    case "left":
      log.warn("change record left alone", { reason: found.reason, path: journal.recordPath });
      return { kind: "left" };
  }
  const { record } = found;
  const { change } = record;
  log.warn("the last agent died in the middle of a change: restoring the state from before it", {
    change: change.kind,
    recordedAt: record.at,
    pid: record.owner.pid,
    bytes: found.bytes,
    attempt: record.attempts + 1,
  });
  if (record.attempts >= MAX_RESTORE_ATTEMPTS) {
    journal.setAside("given up");
    log.error("change record set aside: restoring from it was cut short too often", {
      attempts: record.attempts,
      path: journal.rejectedPath,
    });
    noteRollback(change.kind === "routes-touched" ? "routes" : change.kind, false);
    return { kind: "incomplete", change: change.kind };
  }
  try {
    // As ours now: should this start die too, the next waits for our processes.
    journal.write(change, record.attempts + 1);
  } catch (err) {
    log.warn("cannot count this restore attempt", { error: (err as Error).message });
  }
  const orphans = await awaitOrphans(record.owner, log, options.orphanWaitMs ?? ORPHAN_WAIT_MS);
  const problem = await restore(options, record);
  if (problem === undefined) {
    journal.clear();
    log.info("restored the state from before the change the last agent left unfinished", {
      change: change.kind,
      ...describe(change),
      waitedFor: orphans.found.length,
      killed: orphans.killed.length,
    });
    return { kind: "restored", change: change.kind };
  }
  journal.setAside(problem);
  log.error("restore after the last agent's death incomplete: serving anyway", {
    change: change.kind,
    error: problem,
    path: journal.rejectedPath,
  });
  return { kind: "incomplete", change: change.kind };
}

/** Runs the restore of the record's kind; answers what went wrong, or undefined. */
async function restore(o: RecoverOptions, record: ChangeRecord): Promise<string | undefined> {
  const { ip, log } = o;
  const c = record.change;
  switch (c.kind) {
    case "routes":
      return restoreRoutes(ip, log, c.routes);
    case "routes-touched":
      return restoreTouchedRoutes(ip, log, c);
    case "link": {
      const link = c.links.find((l) => l.index === c.index);
      if (!link) return `link ${c.index} is not in the record`;
      const holder = c.links.find((l) => l.index === c.holder);
      return restoreLink(ip, log, { links: c.links }, link, holder);
    }
    case "neighbours":
      return restoreNeighbours(ip, log, c.before, c.touched);
    case "iptables":
      try {
        await o.iptables.restore(c.family, Buffer.from(c.snapshot, "latin1"), { counters: true });
        noteRollback("iptables", true);
        return undefined;
      } catch (err) {
        noteRollback("iptables", false);
        return (err as Error).message;
      }
    case "state": {
      const complete = await restoreState({ ip, sysctl: o.sysctl, log }, c, c.sysctls, c.created);
      return complete ? undefined : "see the restore's own log lines";
    }
  }
}

/** The size of what was restored, for the log. */
function describe(c: Change): Record<string, number> {
  switch (c.kind) {
    case "routes":
      return { routes: c.routes.length };
    case "routes-touched":
      return { removed: c.removed.length, added: c.added.length };
    case "link":
      return { links: c.links.length };
    case "neighbours":
      return { neighbours: c.touched.length };
    case "iptables":
      return { family: c.family, tables: c.tables.length };
    case "state":
      return { links: c.links.length, routes: c.routes.length, rules: c.rules.length };
  }
}
