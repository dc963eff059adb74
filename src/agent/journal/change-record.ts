/**
 * What a change record holds: who wrote it (boot, network namespace, the
 * agent's PID, start time and process group) and what the change needs to
 * put the old state back, one shape per kind of change. Only what the call
 * has already read goes in, and only the part its restore uses, so a change
 * that does not fail costs one small write and one unlink (journal.ts).
 *
 * The schema checks each kind's shape and the fields the restores read;
 * model objects are otherwise taken as written (loose), so attributes
 * added to the model later ride along without a format change.
 */
import * as v from "valibot";
import type { Link, Neighbor, Nexthop, Route } from "../../net/model/model";
import type { SysctlWrite } from "../../net/plan/plan-apply";
import { isManaged, type RouteOp } from "../../net/plan/routes/plan-routes";
import { touchedRoutes } from "../../net/plan/routes/route-undo";
import type { Rule } from "../../net/plan/rules";

/** The main table's managed routes as read before (a record of an earlier build; still restored). */
export interface RoutesChange {
  kind: "routes";
  routes: Route[];
}

/**
 * An UpdateRoutes that changes something: only the routes its plan touches
 * (the old values of those it removes, the ones it puts in: route-undo.ts),
 * so the record scales with the change, not with the table.
 */
export interface RoutesTouchedChange {
  kind: "routes-touched";
  removed: Route[];
  added: Route[];
}

/** An UpdateInterface: every link as read before, the one changed, the one a swap takes down. */
interface LinkChange {
  kind: "link";
  links: Link[];
  index: number;
  holder?: number;
}

/** An AddARPNeighbors: the entries it touches, and what of them existed before. */
export interface NeighboursChange {
  kind: "neighbours";
  touched: { ip: string; dev: string }[];
  before: Neighbor[];
}

/** A SetIPTables: the restore input that puts the named tables back (iptables-save -c before). */
interface IptablesChange {
  kind: "iptables";
  family: 4 | 6;
  tables: string[];
  snapshot: string;
}

/** An Apply: links, routes of every table, rules, permanent neighbours, nexthop objects before; the sysctl writes with their old values. */
interface StateChange {
  kind: "state";
  links: Link[];
  routes: Route[];
  rules: Rule[];
  neighbors: Neighbor[];
  sysctls: SysctlWrite[];
  nexthops?: Nexthop[];
  /** The tun and tap devices the change makes, by name: a restore deletes them. */
  created?: string[];
}

/**
 * The record of an UpdateRoutes of `ops` planned against `before`: only the
 * routes the plan touches, or the whole managed table when that is fewer
 * routes (a plan that replaces most of the table), so no record is larger
 * than the table it protects.
 */
export function routesChange(
  before: readonly Route[],
  ops: readonly RouteOp[],
): RoutesChange | RoutesTouchedChange {
  const touched = touchedRoutes(ops);
  const managed = before.filter((r) => isManaged(r, true));
  return touched.removed.length + touched.added.length < managed.length
    ? { kind: "routes-touched", ...touched }
    : { kind: "routes", routes: managed };
}

/** The record of an AddARPNeighbors of `specs`: only the entries it touches. */
export function neighboursChange(
  neighbors: readonly Neighbor[],
  specs: readonly { ip: string; dev: string }[],
): NeighboursChange {
  const keys = new Set(specs.map((n) => `${n.ip} ${n.dev}`));
  return {
    kind: "neighbours",
    touched: specs.map(({ ip, dev }) => ({ ip, dev })),
    before: neighbors.filter((n) => keys.has(`${n.ip} ${n.dev}`)),
  };
}

export type Change =
  | RoutesChange
  | RoutesTouchedChange
  | LinkChange
  | NeighboursChange
  | IptablesChange
  | StateChange;

/** The agent that wrote a record. */
export interface RecordOwner {
  pid: number;
  /** Its start time in clock ticks since boot (/proc/PID/stat field 22). */
  start: number;
  /** Its process group when it leads one: every `ip` it started is in it. */
  pgid?: number;
}

export interface ChangeRecord {
  /** /proc/sys/kernel/random/boot_id when written. */
  bootId: string;
  /** The network namespace's identity (device:inode of /proc/self/ns/net). */
  netns: string;
  owner: RecordOwner;
  /** When written (ISO time), for the log. */
  at: string;
  /** Starts that began restoring this record (a restore cut short is tried again, a few times). */
  attempts: number;
  change: Change;
}

const Int = v.pipe(v.number(), v.integer());
const Str = v.string();
const RouteSchema = v.looseObject({ family: v.picklist([4, 6]), dst: Str, dev: Str });
const LinkSchema = v.looseObject({
  index: Int,
  name: Str,
  mtu: Int,
  flags: v.array(Str),
  addresses: v.array(v.looseObject({ family: v.picklist([4, 6]), address: Str, prefix: Int })),
});
const NeighborSchema = v.looseObject({ ip: Str, dev: Str, lladdr: Str, state: v.array(Str) });
const NexthopSchema = v.looseObject({ id: Int, family: v.picklist([0, 4, 6]), dev: Str });
const RuleSchema = v.looseObject({ family: v.picklist([4, 6]), priority: Int, action: Str });
const SysctlWriteSchema = v.object({
  key: Str,
  value: Str,
  restoreKey: Str,
  previous: v.optional(Str),
});

const ChangeSchema = v.variant("kind", [
  v.object({ kind: v.literal("routes"), routes: v.array(RouteSchema) }),
  v.object({
    kind: v.literal("routes-touched"),
    removed: v.array(RouteSchema),
    added: v.array(RouteSchema),
  }),
  v.object({
    kind: v.literal("link"),
    links: v.array(LinkSchema),
    index: Int,
    holder: v.optional(Int),
  }),
  v.object({
    kind: v.literal("neighbours"),
    touched: v.array(v.object({ ip: Str, dev: Str })),
    before: v.array(NeighborSchema),
  }),
  v.object({
    kind: v.literal("iptables"),
    family: v.picklist([4, 6]),
    tables: v.array(Str),
    snapshot: Str,
  }),
  v.object({
    kind: v.literal("state"),
    links: v.array(LinkSchema),
    routes: v.array(RouteSchema),
    rules: v.array(RuleSchema),
    neighbors: v.array(NeighborSchema),
    sysctls: v.array(SysctlWriteSchema),
    nexthops: v.optional(v.array(NexthopSchema)),
    created: v.optional(v.array(Str)),
  }),
]);

const RecordSchema = v.object({
  bootId: Str,
  netns: Str,
  owner: v.object({ pid: Int, start: Int, pgid: v.optional(Int) }),
  at: Str,
  attempts: Int,
  change: ChangeSchema,
});

/** The record in `body`, or what is wrong with it (the first problem, with its path). */
export function parseChangeRecord(
  body: unknown,
): { ok: true; record: ChangeRecord } | { ok: false; reason: string } {
  const r = v.safeParse(RecordSchema, body);
  if (r.success) return { ok: true, record: r.output as unknown as ChangeRecord };
  const issue = r.issues[0];
  const path = issue.path?.map((p) => String(p.key)).join(".") ?? "";
  return { ok: false, reason: `${path ? `${path}: ` : ""}${issue.message}` };
}
