/**
 * One netagent.v1 Apply, inside the write queue: read, one plan, one
 * `ip -batch` (+ `ip -6 -batch` for IPv6 rules), the sysctl writes, the
 * read back, and at most one corrective batch when the kernel did what the
 * plan's model did not foresee (plan-link-phase.ts). Any failure restores
 * links, routes of every table, rules, permanent neighbours and the
 * sysctls written, from the state read before. A plan without changes
 * answers the state read before it.
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
import { APPLY_MAX_REFUSED, PEER_ROUTE_POLL_MS, PEER_ROUTE_WAIT_MS } from "../../common/limits";
import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { DesiredState, FullState } from "../../net/model/full-state";
import { IpBatchError } from "../../net/parse/ip-results";
import { hasPeerRoute, peerRoutes6 } from "../../net/plan/kernel-routes";
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
import { isManagedLink } from "../../net/vocabulary/links";
import { TUN_DEVICE } from "../../net/vocabulary/tuntap";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { Change } from "../journal/change-record";
import { ipv6First, readAfterWrites } from "./apply-kernel-steps";
import { tuntapProblems } from "./apply-tuntaps";
import { deferIpv6, settleRaised } from "./raised-links";
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

export interface LeftOut {
  field: string;
  reason: string;
}

export interface ApplyOutcome {
  /** After the change (dry run: as it is). */
  state: FullState;
  plan: ApplyPlan;
  leftOut: LeftOut[];
}

/** The read back still differs from the plan after the corrective batch. */
class NotConverged extends Error {
  constructor(readonly line: string) {
    super(`Apply did not converge: still to do: ${line}`);
  }
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

/** Checks that every link the request names (but what `skip` leaves out) will exist under that name. */
function requireLinks(
  before: Omit<FullState, "sysctls">,
  desired: DesiredState,
  skip: LeftOutFields,
  finalNames: Set<string>,
): void {
  for (const [i, l] of desired.links.entries()) {
    if (l.tuntap) continue;
    if (!before.links.some((x) => x.mac === l.mac)) {
      throw new TtrpcError(
        `Link not found (desired.interfaces[${i}].mac ${l.mac})`,
        Code.NOT_FOUND,
      );
    }
  }
  // The field's name is built only for a device that is missing (10,000 routes, every call).
  const need = (dev: string, field: () => string) => {
    if (dev === "" || finalNames.has(dev)) return;
    const f = field();
    if (!skip.has(f.slice(0, f.lastIndexOf("."))))
      throw new TtrpcError(`Link not found (${f} ${dev})`, Code.NOT_FOUND);
  };
  desired.routes.forEach((r, i) => {
    need(r.dev, () => `desired.routes[${i}].device`);
    r.hops?.forEach((h, k) => {
      if (!skip.has(`desired.routes[${i}]`))
        need(h.dev, () => `desired.routes[${i}].hops[${k}].device`);
    });
  });
  desired.nexthops.forEach((n, i) => {
    need(n.dev, () => `desired.nexthops[${i}].device`);
  });
  desired.neighbors.forEach((n, i) => {
    need(n.dev, () => `desired.neighbors[${i}].device`);
  });
  desired.sysctls.forEach((s, i) => {
    const k = parseSysctlKey(s.key);
    if (typeof k === "string" || k.iface === undefined) return;
    if (k.iface === "all" || k.iface === "default" || !isManagedLink(k.iface)) return;
    need(k.iface, () => `desired.sysctls[${i}].key`);
  });
}

/**
 * The plan's batches and the read back (one ip process for the main batch
 * and its read; the IPv6 rules read again only when the plan touched
 * them), the sysctl writes, then at most one corrective batch.
 */
async function attempt(
  deps: ApplyDeps,
  first: ApplyPlan,
  before: FullState,
  desired: DesiredState,
  run: ApplyRun,
): Promise<FullState> {
  const { ip, sysctl, log } = deps;
  const opts = { signal: run.signal };
  const keys = desired.sysctls.map((s) => s.key);
  const ipv6On = await ipv6First(deps, first, before, desired, run);
  const plan = await settleLinks(deps, ipv6On.plan, ipv6On.before, desired, run);
  await ip.batch(plan.batch6First, { ipv6: true, ...opts });
  const batching = ip.batchAndRead(plan.batch, opts, plan.batchParts);
  // Routes, rules, nexthop objects and neighbours change no sysctl: without
  // a link line or a sysctl write the keys are read while ip runs the
  // batch (its process is started by now), not after it (600 keys, 10-15 ms).
  const early = plan.links.lines.length === 0 && plan.sysctls.length === 0;
  const sysctlsRead = early ? sysctl.read(keys) : undefined;
  deps.batchRunning?.(first);
  const read = await batching;
  await ip.batch(plan.batch6, { ipv6: true, ...opts });
  const touched6 = plan.ruleOps.some((o) => o.rule.family === 6);
  const rules6 = touched6 ? await ip.readRules6(opts) : before.rules.filter((r) => r.family === 6);
  for (const s of plan.sysctls) sysctl.write(s.key, s.value);
  const { rules4, ...rest } = read;
  let after: FullState = await readAfterWrites(
    deps,
    plan,
    { ...rest, rules: [...rules4, ...rules6], sysctls: sysctlsRead ?? sysctl.read(keys) },
    keys,
    run,
  );
  let again = planApply(after, desired, { exact: run.exact });
  const more = (p: ApplyPlan) => p.batch6First.length + p.batch.length + p.batch6.length;
  if (more(again) === 0) return after;
  log.info("Apply: correcting what the plan did not foresee", { lines: more(again) });
  await ip.batch(again.batch6First, { ipv6: true, ...opts });
  await ip.batch(again.batch, opts);
  await ip.batch(again.batch6, { ipv6: true, ...opts });
  after = { ...(await ip.readFullState(opts)), sysctls: sysctl.read(keys) };
  again = planApply(after, desired, { exact: run.exact });
  const left = [...again.batch6First, ...again.batch, ...again.batch6];
  if (left.length > 0) throw new NotConverged(left[0] as string);
  return after;
}

/**
 * A plan that removes addresses makes the kernel drop routes in ways the
 * plan's model does not follow (every IPv4 route of a link left without an
 * IPv4 address, in every table; routes by the removed source). Then the
 * link lines run first, with a read, and the rest is planned against what
 * the kernel really left: two batches instead of one, and no delete of a
 * route the kernel already took. So does a plan that adds an IPv6 address
 * with a peer: the read is repeated until the kernel's route to the peer
 * is there (at most PEER_ROUTE_WAIT_MS; it takes a few milliseconds). So
 * does a plan that raises a link with IPv6 addresses to put on it: they
 * go on once the link is ready (raised-links.ts). The sysctl writes, with
 * their previous values for the restore, stay the first plan's.
 */
async function settleLinks(
  deps: ApplyDeps,
  plan: ApplyPlan,
  before: FullState,
  desired: DesiredState,
  run: ApplyRun,
): Promise<ApplyPlan> {
  // A link going down and up is in the model (plan-link-phase.ts); an
  // address going away is not, and neither is the moment IPv6 takes to
  // route to a new address's peer: a gateway route through the peer in the
  // same batch is refused ("No route to host").
  const peers = peerRoutes6(plan.links.predicted).filter((p) => !hasPeerRoute(before.routes, p));
  const settle = plan.links.lines.length > 0 && peers.length > 0;
  // IPv6 addresses of links the plan raises wait for the links to be ready (raised-links.ts).
  const { first, raised } = deferIpv6(plan.links.lines);
  const dels = plan.links.lines.some((l) => l.startsWith("addr del "));
  if (!settle && !dels && raised.length === 0) return plan;
  const opts = { signal: run.signal };
  let read = await deps.ip.batchAndRead(first, opts);
  if (raised.length > 0) {
    await settleRaised(deps.ip, raised);
    read = await deps.ip.batchAndRead([], opts);
  }
  const end = performance.now() + PEER_ROUTE_WAIT_MS;
  while (peers.some((p) => !hasPeerRoute(read.routes, p)) && performance.now() < end) {
    await Bun.sleep(PEER_ROUTE_POLL_MS);
    read = await deps.ip.batchAndRead([], opts);
  }
  const { rules4, ...rest } = read;
  const now: FullState = {
    ...rest,
    rules: [...rules4, ...before.rules.filter((r) => r.family === 6)],
    sysctls: before.sysctls,
  };
  return { ...planApply(now, desired, { exact: run.exact }), sysctls: plan.sysctls };
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
