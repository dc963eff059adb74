/**
 * One netagent.v1 Apply, inside the write queue: read, one plan, one
 * `ip -batch` (+ `ip -6 -batch` for IPv6 rules), the sysctl writes, the
 * read back, and at most one corrective batch when the kernel did what the
 * plan's model did not foresee (plan-link-phase.ts). Any failure restores
 * links, routes of every table, rules, permanent neighbours and the
 * sysctls written, from the state read before. A plan without changes
 * answers the state read before it. One attempt's batches and read back
 * are apply-attempt.ts; the check that the links named exist,
 * require-links.ts.
 *
 * best_effort: an element the guest's kernel refuses (plan-culprit.ts names
 * it from the failed line, the sysctl key or the change that did not stay)
 * is left out and the Apply tried again without it, after the restore and
 * a fresh read; at most {@link APPLY_MAX_REFUSED} times. Sysctls the guest
 * does not have at all are left out before the first attempt, and so are
 * tun and tap devices to make when the guest has no /dev/net/tun or whose
 * name it holds otherwise (without best_effort: FAILED_PRECONDITION),
 * each with what goes through it (plan-culprit.ts fieldsThrough).
 */
import { existsSync } from "node:fs";
import { codeOfNetError } from "../../common/error-status";
import { APPLY_MAX_REFUSED } from "../../common/limits";
import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { DesiredState, FullState } from "../../net/model/full-state";
import { IpBatchError } from "../../net/parse/ip-results";
import { type ApplyPlan, currentKey, planApply, type SysctlWrite } from "../../net/plan/plan-apply";
import {
  culpritOf,
  fieldsThrough,
  type LeftOutFields,
  sysctlField,
  withoutFields,
} from "../../net/plan/plan-culprit";
import { type LinkPhase, planLinkPhase } from "../../net/plan/plan-link-phase";
import { planLinksRestore, planStateRestore } from "../../net/plan/plan-restore";
import { type SysctlFs, SysctlWriteError } from "../../net/sysctl/sysctl-fs";
import { parseSysctlKey } from "../../net/sysctl/sysctl-keys";
import { TUN_DEVICE } from "../../net/vocabulary/tuntap";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { Change } from "../journal/change-record";
import { attempt, NotConverged } from "./apply-attempt";
import { tuntapProblems } from "./apply-tuntaps";
import { requireLinks } from "./require-links";
import { noteRollback } from "./rollbacks";

export interface ApplyDeps {
  ip: IpRunner;
  sysctl: SysctlFs;
  log: Logger;
  /**
   * Records what puts the state before back, for a restore after a crash
   * (SerialQueue.record): called before each attempt's first change.
   */
  record(change: () => Change): void;
  /** Whether tun and tap devices can be made (default: {@link TUN_DEVICE} exists). */
  tunDevice?: () => boolean;
  /** The guest's state, being read already (inside the write queue), for the first attempt. */
  firstRead?: ReturnType<IpRunner["readFullState"]>;
  /**
   * Called with an attempt's plan once ip runs its main batch: work for
   * the answer that does not wait for the read back is done meanwhile.
   */
  batchRunning?(plan: ApplyPlan): void;
  /**
   * Shown each attempt's plan and the state it was made from, before
   * anything changes (the policy: throws to refuse the whole call).
   */
  admit?(before: FullState, plan: ApplyPlan): void;
}

export interface ApplyRun {
  exact: boolean;
  dryRun: boolean;
  bestEffort: boolean;
  /** The call's: kills a running ip when the caller gives up (restores run without it). */
  signal?: AbortSignal;
}

interface LeftOut {
  field: string;
  reason: string;
}

export interface ApplyOutcome {
  /** After the change (dry run: as it is). */
  state: FullState;
  plan: ApplyPlan;
  leftOut: LeftOut[];
}

export async function applyState(
  deps: ApplyDeps,
  desired: DesiredState,
  run: ApplyRun,
): Promise<ApplyOutcome> {
  const { ip, sysctl, log } = deps;
  const opts = { signal: run.signal };
  const skip = new Set<string>();
  const leftOut: LeftOut[] = [];
  const tunDevice = deps.tunDevice ?? (() => existsSync(TUN_DEVICE));

  /** Leaves `field` out, and with a whole tun or tap device what goes through it. */
  const leave = (field: string, reason: string) => {
    skip.add(field);
    leftOut.push({ field, reason });
    const m = /^desired\.interfaces\[(\d+)\]$/.exec(field);
    const link = m ? desired.links[Number(m[1])] : undefined;
    if (!link?.tuntap) return;
    for (const f of fieldsThrough(desired, link.name)) {
      if (skip.has(f)) continue;
      skip.add(f);
      leftOut.push({ field: f, reason: `its device ${link.name} is left out` });
    }
  };

  /** Tun and tap devices that cannot be: left out (best_effort) or the call's refusal. */
  const checkTuntaps = (phase: LinkPhase): boolean => {
    const problems = tuntapProblems(phase, desired, tunDevice);
    for (const p of problems) {
      if (!run.bestEffort) throw new TtrpcError(p.reason, Code.FAILED_PRECONDITION);
      leave(p.field, p.reason);
    }
    return problems.length > 0;
  };

  /** The state before, read for the desired state without `skip`, its links checked. */
  let pending = deps.firstRead;
  const readBefore = async (): Promise<FullState> => {
    const first = pending;
    pending = undefined;
    const read = await (first ?? ip.readFullState(opts));
    let want = withoutFields(desired, skip);
    let phase = planLinkPhase(read.links, want.links);
    if (checkTuntaps(phase)) {
      want = withoutFields(desired, skip);
      phase = planLinkPhase(read.links, want.links);
    }
    requireLinks(read, desired, skip, new Set(phase.predicted.map((l) => l.name)));
    if (run.bestEffort) {
      for (const s of want.sysctls) {
        // A device the plan makes has its keys only once it exists.
        const k = parseSysctlKey(s.key);
        if (typeof k !== "string" && k.iface !== undefined && phase.created.includes(k.iface))
          continue;
        if (sysctl.exists(currentKey(s.key, phase.formerName))) continue;
        const field = sysctlField(desired, s.key) as string;
        skip.add(field);
        leftOut.push({ field, reason: `sysctl ${s.key}: the guest's kernel has no such key` });
      }
    }
    const keys = withoutFields(desired, skip).sysctls.map((s) =>
      currentKey(s.key, phase.formerName),
    );
    return { ...read, sysctls: sysctl.read(keys) };
  };

  let before = await readBefore();
  for (let refused = 0; ; ) {
    const want = withoutFields(desired, skip);
    const plan = planApply(before, want, { exact: run.exact });
    // Every attempt's plan (cheap: the request itself was checked before the read).
    deps.admit?.(before, plan);
    if (run.dryRun) return { state: before, plan, leftOut };
    const changes =
      plan.batch6First.length + plan.batch.length + plan.batch6.length + plan.sysctls.length;
    if (changes === 0) {
      // The state just read is the result: no second read, no second plan.
      log.info("state applied", { operations: 0, exact: run.exact, leftOut: leftOut.length });
      return { state: before, plan, leftOut };
    }
    const was = before;
    deps.record(() => ({
      kind: "state",
      links: was.links,
      routes: was.routes,
      rules: was.rules,
      neighbors: was.neighbors.filter((n) => n.state.includes("PERMANENT")),
      sysctls: plan.sysctls,
      ...(was.nexthops ? { nexthops: was.nexthops } : {}),
      ...(plan.links.created.length ? { created: plan.links.created } : {}),
    }));
    try {
      const state = await attempt(deps, plan, before, want, run);
      log.info("state applied", { operations: changes, exact: run.exact, leftOut: leftOut.length });
      return { state, plan, leftOut };
    } catch (err) {
      const complete = await restoreState(deps, before, plan.sysctls, plan.links.created);
      const field =
        run.bestEffort && complete && refused < APPLY_MAX_REFUSED && !run.signal?.aborted
          ? refusedElement(err, desired, skip, before)
          : undefined;
      if (field === undefined) throw forCaller(err);
      refused++;
      leave(field, (err as Error).message);
      log.info("Apply: leaving out what the guest refused", {
        field,
        error: (err as Error).message,
      });
      before = await readBefore();
    }
  }
}

/** The field of the element a refusal is about, when it is one the guest's kernel refused. */
function refusedElement(
  err: unknown,
  desired: DesiredState,
  skip: LeftOutFields,
  before: FullState,
): string | undefined {
  if (err instanceof SysctlWriteError) return sysctlField(desired, err.key);
  if (err instanceof NotConverged) return culpritOf(err.line, desired, skip, before.links);
  if (!(err instanceof IpBatchError) || err.line === undefined) return undefined;
  // ip ran the line and it was refused (unclassified words too); not a run
  // killed or cut short, not a device busy for a moment.
  const refusal = err.kind !== "unavailable" && err.kind !== "aborted";
  return refusal ? culpritOf(err.line, desired, skip, before.links) : undefined;
}

/** The error as the caller sees it. */
function forCaller(err: unknown): unknown {
  if (err instanceof IpBatchError) {
    return new TtrpcError(`Apply: ${err.message}`, codeOfNetError(err), { cause: err });
  }
  if (err instanceof NotConverged) return new TtrpcError(err.message, Code.INTERNAL);
  return err;
}

/**
 * Puts links, routes of every table, rules, permanent neighbours and the
 * sysctls written back as in `before` (also a start's restore after a
 * crash, recover.ts), the tun and tap devices made (`created`) deleted.
 * Best effort and logged: links first (names decide
 * where sysctls live), then the rest, then sysctls. Answers whether it
 * finished.
 */
export async function restoreState(
  deps: Pick<ApplyDeps, "ip" | "sysctl" | "log">,
  before: Omit<FullState, "sysctls">,
  writes: readonly Pick<SysctlWrite, "restoreKey" | "previous">[],
  created: readonly string[] = [],
): Promise<boolean> {
  const { ip, sysctl, log } = deps;
  let complete = true;
  try {
    const now = await ip.readFullState();
    await ip.batch(planLinksRestore(before.links, now.links, created), { force: true });
    const after = await ip.readFullState();
    const lines = planStateRestore(
      { ...before, sysctls: new Map() },
      { ...after, sysctls: new Map() },
    );
    await ip.batch(lines.batch6First, { force: true, ipv6: true });
    await ip.batch(lines.batch, { force: true });
    await ip.batch(lines.batch6, { force: true, ipv6: true });
  } catch (err) {
    log.error("restore incomplete", { what: "network state", error: (err as Error).message });
    complete = false;
  }
  for (const w of [...writes].reverse()) {
    if (w.previous === undefined) continue;
    try {
      sysctl.write(w.restoreKey, w.previous);
    } catch (err) {
      log.error("restore incomplete", { what: w.restoreKey, error: (err as Error).message });
      complete = false;
    }
  }
  log.info("restored state after a failed Apply", { sysctls: writes.length });
  noteRollback("state", complete);
  return complete;
}
