/**
 * Neighbour lines: `neigh replace` (replace semantics, so re-sending an
 * entry is not an error) and the lines that undo them.
 */
import { parseIp } from "../model/address";
import type { Neighbor } from "../model/model";
import { type Attr, attrsText, attrWords } from "../vocabulary/attrs";
import { isProxy, NEIGHBOR_ATTRS } from "../vocabulary/neighbor-attrs";
import { batchLine } from "./render-batch";

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

/** An entry's identity with its address in one spelling, whoever wrote it (ip or a request). */
function entryKey(n: { ip: string; dev: string }): string {
  const p = parseIp(n.ip);
  return `${typeof p === "string" ? n.ip : p.text} ${n.dev}`;
}

/** What a restore puts back for an entry `before` had, or undefined: the entry is deleted. */
function restorable(old: Neighbor | undefined): NeighborEntry | undefined {
  const state = old?.state[0]?.toLowerCase();
  if (!old?.lladdr || !state || state === "failed" || state === "incomplete") return undefined;
  return {
    ip: old.ip,
    dev: old.dev,
    lladdr: old.lladdr,
    nud: state,
    router: old.router,
    externLearned: false,
  };
}

/** Lines that put the entries `applied` touched back as `before` had them. */
export function planNeighborRestore(
  before: readonly Neighbor[],
  applied: readonly { ip: string; dev: string }[],
): string[] {
  const old = new Map(before.map((b) => [entryKey(b), b]));
  return applied.map((n) => {
    const entry = restorable(old.get(entryKey(n)));
    return entry ? renderNeighborReplace(entry) : batchLine(["neigh", "del", n.ip, "dev", n.dev]);
  });
}

/**
 * The touched entries that are not as `before` had them in `now` (a read
 * after the restore), by "IP dev". A restore runs with -force and a delete
 * of an entry a cut-short change never added fails: its exit status cannot
 * say whether the entries are back, this read can.
 */
export function neighboursNotRestored(
  before: readonly Neighbor[],
  touched: readonly { ip: string; dev: string }[],
  now: readonly Neighbor[],
): string[] {
  const old = new Map(before.map((b) => [entryKey(b), b]));
  const current = new Map(now.map((n) => [entryKey(n), n]));
  const wrong: string[] = [];
  for (const t of touched) {
    const k = entryKey(t);
    const want = restorable(old.get(k));
    const have = current.get(k);
    const haveState = have?.state[0]?.toLowerCase();
    const ok = want
      ? have !== undefined &&
        have.lladdr.toLowerCase() === want.lladdr.toLowerCase() &&
        haveState === want.nud &&
        have.router === want.router
      : have === undefined || haveState === "failed" || haveState === "incomplete";
    if (!ok) wrong.push(k);
  }
  return wrong;
}
