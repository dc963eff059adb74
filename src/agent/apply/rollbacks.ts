/**
 * Changes undone after a failure, counted by what was put back (link,
 * routes, neighbours, iptables, state) and whether the restore finished:
 * the agent's metrics report them (netagent_rollbacks_total). The kinds are
 * this file's, never a peer's words, so the table stays small.
 */

export type RollbackKind = "link" | "routes" | "neighbours" | "iptables" | "state";

const counts = new Map<string, number>();

/** Notes one rollback of `kind`; `complete` false when the restore could not finish. */
export function noteRollback(kind: RollbackKind, complete: boolean): void {
  const key = `${kind}\0${complete ? "complete" : "incomplete"}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** The counts so far: kind, result, count. */
export function rollbackCounts(): { kind: string; result: string; count: number }[] {
  return [...counts].map(([key, count]) => {
    const [kind = "", result = ""] = key.split("\0");
    return { kind, result, count };
  });
}
