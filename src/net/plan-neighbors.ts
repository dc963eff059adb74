/**
 * Neighbour lines: `neigh replace` (replace semantics, so re-sending an
 * entry is not an error) and the lines that undo them.
 */
import type { Neighbor } from "./model";
import { batchLine } from "./render-batch";
import { type Attr, attrsText, attrWords } from "./vocabulary/attrs";
import { isProxy, NEIGHBOR_ATTRS } from "./vocabulary/neighbor-attrs";

export interface NeighborEntry {
  ip: string;
  dev: string;
  lladdr: string;
  nud: string;
  router: boolean;
  externLearned: boolean;
}

/** What a permanent or proxy entry of netagent.v1 is. */
export interface StateNeighbor {
  ip: string;
  dev: string;
  /** "" for a proxy entry. */
  lladdr: string;
  router: boolean;
  attrs?: readonly Attr[];
}

/** Identifies an entry: a proxy entry is another object than a neighbour of the same address. */
export function neighborKey(n: StateNeighbor): string {
  return `${isProxy(n) ? "proxy " : ""}${n.ip} ${n.dev}`;
}

/** The rest: two entries of one key with the same text are the same. */
export function neighborRest(n: StateNeighbor): string {
  return `${n.lladdr} ${n.router} ${attrsText(n.attrs)}`;
}

/**
 * A permanent entry (netagent.v1 Apply and its restore):
 * `neigh replace ... nud permanent [router] [extern_learn]`, or a proxy
 * entry: `neigh replace proxy IP dev D [router]`.
 */
export function renderPermanentNeighbor(n: StateNeighbor): string {
  if (isProxy(n)) {
    const t = ["neigh", "replace", "proxy", n.ip, "dev", n.dev];
    if (n.router) t.push("router");
    return batchLine(t);
  }
  const t = ["neigh", "replace", n.ip, "lladdr", n.lladdr, "dev", n.dev, "nud", "permanent"];
  if (n.router) t.push("router");
  const rest = (n.attrs ?? []).filter(([k]) => k !== "proxy");
  t.push(...attrWords(NEIGHBOR_ATTRS, rest));
  return batchLine(t);
}

/** `neigh del [proxy] IP dev D`. */
export function renderNeighborDelete(n: StateNeighbor): string {
  return batchLine(["neigh", "del", ...(isProxy(n) ? ["proxy"] : []), n.ip, "dev", n.dev]);
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
