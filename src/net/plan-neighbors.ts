/**
 * Neighbour lines: `neigh replace` (replace semantics, so re-sending an
 * entry is not an error) and the lines that undo them.
 */
import type { Neighbor } from "./model";
import { batchLine } from "./render-batch";

export interface NeighborEntry {
  ip: string;
  dev: string;
  lladdr: string;
  nud: string;
  router: boolean;
  externLearned: boolean;
}

/** A permanent entry (netagent.v1 Apply and its restore): `neigh replace ... nud permanent`. */
export function renderPermanentNeighbor(n: {
  ip: string;
  dev: string;
  lladdr: string;
  router: boolean;
}): string {
  const t = ["neigh", "replace", n.ip, "lladdr", n.lladdr, "dev", n.dev, "nud", "permanent"];
  if (n.router) t.push("router");
  return batchLine(t);
}

export function renderNeighborReplace(n: NeighborEntry): string {
  const t = ["neigh", "replace", n.ip];
  if (n.lladdr) t.push("lladdr", n.lladdr);
  t.push("dev", n.dev, "nud", n.nud);
  if (n.router) t.push("router");
  if (n.externLearned) t.push("extern_learn");
  return batchLine(t);
}

/** Lines that put the entries `applied` touched back as `before` had them. */
export function planNeighborRestore(
  before: readonly Neighbor[],
  applied: readonly NeighborEntry[],
): string[] {
  const lines: string[] = [];
  for (const n of applied) {
    const old = before.find((b) => b.ip === n.ip && b.dev === n.dev);
    const state = old?.state[0]?.toLowerCase();
    if (old?.lladdr && state && state !== "failed" && state !== "incomplete") {
      lines.push(
        renderNeighborReplace({
          ip: old.ip,
          dev: old.dev,
          lladdr: old.lladdr,
          nud: state,
          router: old.router,
          externLearned: false,
        }),
      );
    } else {
      lines.push(batchLine(["neigh", "del", n.ip, "dev", n.dev]));
    }
  }
  return lines;
}
