/**
 * netagent.v1.Network: the whole network state in one call. Apply is
 * validate → (serialised with the other writers) read → plan → one
 * `ip -batch` (+ `ip -6 -batch` for IPv6 rules) → sysctl
 * writes → read back. Any failure restores links, routes of every table,
 * rules, permanent neighbours and the sysctls written, from the state read
 * before. The read back is planned against again: if the kernel did
 * something the plan's model did not foresee (see plan-link-phase.ts), one
 * corrective batch runs; if the state still differs, the call is undone
 * and fails INTERNAL rather than answer a state it did not reach.
 */

import type { Network } from "../gen/network_pb";
import type { DesiredState, FullState, Sysctl } from "../net/full-state";
import { IpBatchError, type IpRunner } from "../net/ip-runner";
import { type ApplyPlan, currentKey, planApply, type SysctlWrite } from "../net/plan-apply";
import { planLinkPhase } from "../net/plan-link-phase";
import { planLinksRestore, planStateRestore } from "../net/plan-restore";
import type { SysctlFs } from "../net/sysctl-fs";
import { parseSysctlKey } from "../net/sysctl-keys";
import { isManagedLink } from "../net/vocabulary/links";
import { Code, TtrpcError } from "../ttrpc/codes";
import type { ServiceImpl } from "../ttrpc/service";
import { stateToWire } from "../wire/state-map";
import { codeOfNetError } from "./error-status";
import type { Logger } from "./log";
import { noteRollback } from "./rollbacks";
import type { SerialQueue } from "./serial-queue";
import { validateApply } from "./validate-state";

export interface StateServiceOptions {
  ip: IpRunner;
  sysctl: SysctlFs;
  log: Logger;
  /** The write queue shared with grpc.AgentService: one writer at a time. */
  queue: SerialQueue;
}

/** The plan as Apply answers it: batch lines, `ip -6` lines, then sysctl writes. */
export function planText(plan: ApplyPlan): string[] {
  return [
    ...plan.batch,
    ...plan.batch6.map((l) => `-6 ${l}`),
    ...plan.sysctls.map((s) => `sysctl ${s.key}=${s.value}`),
  ];
}

/**
 * Puts links, routes of every table, rules, permanent neighbours and the
 * sysctls written back as in `before` (also a start's restore after a
 * crash, recover.ts). Best effort and logged: links first (names decide
 * where sysctls live), then the rest, then sysctls. Answers whether it
 * finished.
 */
export async function restoreState(
  deps: { ip: IpRunner; sysctl: SysctlFs; log: Logger },
  before: Omit<FullState, "sysctls">,
  writes: readonly Pick<SysctlWrite, "restoreKey" | "previous">[],
): Promise<boolean> {
  const { ip, sysctl, log } = deps;
  let complete = true;
  try {
    const now = await ip.readFullState();
    await ip.batch(planLinksRestore(before.links, now.links), { force: true });
    const after = await ip.readFullState();
    const lines = planStateRestore(
      { ...before, sysctls: new Map() },
      { ...after, sysctls: new Map() },
    );
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

export function createStateService(options: StateServiceOptions): ServiceImpl<typeof Network> {
  const { ip, sysctl, log, queue } = options;

  async function readState(
    sysctlKeys: Iterable<string>,
    opts?: { signal?: AbortSignal },
  ): Promise<FullState> {
    const s = await ip.readFullState(opts);
    return { ...s, sysctls: sysctl.read(sysctlKeys) };
  }

  /** Checks that every link the request names will exist under that name. */
  function requireLinks(before: FullState, desired: DesiredState, finalNames: Set<string>): void {
    for (const [i, l] of desired.links.entries()) {
      if (!before.links.some((x) => x.mac === l.mac)) {
        throw new TtrpcError(
          `Link not found (desired.interfaces[${i}].mac ${l.mac})`,
          Code.NOT_FOUND,
        );
      }
    }
    const need = (field: string, dev: string) => {
      if (dev !== "" && !finalNames.has(dev))
        throw new TtrpcError(`Link not found (${field} ${dev})`, Code.NOT_FOUND);
    };
    for (const [i, r] of desired.routes.entries()) need(`desired.routes[${i}].device`, r.dev);
    for (const [i, n] of desired.neighbors.entries()) need(`desired.neighbors[${i}].device`, n.dev);
    for (const [i, s] of desired.sysctls.entries()) {
      const k = parseSysctlKey(s.key);
      if (typeof k === "string" || k.iface === undefined) continue;
      if (k.iface === "all" || k.iface === "default" || !isManagedLink(k.iface)) continue;
      need(`desired.sysctls[${i}].key`, k.iface);
    }
  }

  /**
   * The plan's batch and the read back in one ip process; the IPv6 rules
   * are read again only when the plan touched them. Then the sysctl writes.
   */
  async function execute(
    plan: ApplyPlan,
    before: FullState,
    sysctlKeys: readonly string[],
    opts: { signal?: AbortSignal },
  ): Promise<FullState> {
    const read = await ip.batchAndRead(plan.batch, opts);
    await ip.batch(plan.batch6, { ipv6: true, ...opts });
    const touched6 = plan.ruleOps.some((o) => o.rule.family === 6);
    const rules6 = touched6
      ? await ip.readRules6(opts)
      : before.rules.filter((r) => r.family === 6);
    for (const s of plan.sysctls) sysctl.write(s.key, s.value);
    const { rules4, ...rest } = read;
    return { ...rest, rules: [...rules4, ...rules6], sysctls: sysctl.read(sysctlKeys) };
  }

  /**
   * A plan that removes addresses makes the kernel drop routes in ways the
   * plan's model does not follow (every IPv4 route of
   * a link left without an IPv4 address, in every table; routes by the
   * removed source). Then the link lines run first, with a read, and the
   * rest is planned against what the kernel really left: two batches
   * instead of one, and no delete of a route the kernel already took.
   * Answers the plan to run (the sysctl writes, with their previous values
   * for the restore, stay the first plan's).
   */
  async function settleLinks(
    plan: ApplyPlan,
    before: FullState,
    desired: DesiredState,
    exact: boolean,
    opts: { signal?: AbortSignal },
  ): Promise<ApplyPlan> {
    // A link going down and up is in the model (plan-link-phase.ts); an
    // address going away is not.
    const restructures = plan.links.lines.some((l) => l.startsWith("addr del "));
    if (!restructures) return plan;
    const mid = await ip.batchAndRead(plan.links.lines, opts);
    const { rules4, ...rest } = mid;
    const now: FullState = {
      ...rest,
      rules: [...rules4, ...before.rules.filter((r) => r.family === 6)],
      sysctls: before.sysctls,
    };
    const next = planApply(now, desired, { exact });
    return { ...next, sysctls: plan.sysctls };
  }

  return {
    async get(_request, ctx) {
      const s = await ip.readFullState({ signal: ctx.signal });
      const names = s.links.map((l) => l.name).filter(isManagedLink);
      const values = sysctl.read(sysctl.list(names));
      const sysctls: Sysctl[] = [...values].map(([key, value]) => ({ key, value }));
      return stateToWire({ ...s, sysctls });
    },

    async apply(request, ctx) {
      const desired = validateApply(request);
      const exact = request.exact;
      // The call's signal kills a running ip when the caller gives up; the
      // restore runs without it, so a cancelled Apply still puts everything back.
      const run = { signal: ctx.signal };
      return queue.run(async () => {
        const links = await ip.readFullState(run);
        const phase = planLinkPhase(links.links, desired.links);
        const keys = desired.sysctls.map((s) => currentKey(s.key, phase.formerName));
        const before: FullState = { ...links, sysctls: sysctl.read(keys) };
        requireLinks(before, desired, new Set(phase.predicted.map((l) => l.name)));
        const plan = planApply(before, desired, { exact });
        const text = planText(plan);
        const sysctlsOf = (s: FullState) => [...s.sysctls].map(([key, value]) => ({ key, value }));
        if (request.dryRun) {
          return { result: stateToWire({ ...before, sysctls: sysctlsOf(before) }), plan: text };
        }
        const desiredKeys = desired.sysctls.map((s) => s.key);
        if (text.length > 0) {
          queue.record(() => ({
            kind: "state",
            links: before.links,
            routes: before.routes,
            rules: before.rules,
            neighbors: before.neighbors.filter((n) => n.state.includes("PERMANENT")),
            sysctls: plan.sysctls,
          }));
        }
        try {
          const settled = await settleLinks(plan, before, desired, exact, run);
          let after = await execute(settled, before, desiredKeys, run);
          let again = planApply(after, desired, { exact });
          if (again.batch.length + again.batch6.length > 0) {
            log.info("Apply: correcting what the plan did not foresee", {
              lines: again.batch.length + again.batch6.length,
            });
            await ip.batch(again.batch, run);
            await ip.batch(again.batch6, { ipv6: true, ...run });
            after = await readState(desiredKeys, run);
            again = planApply(after, desired, { exact });
            if (again.batch.length + again.batch6.length > 0) {
              throw new TtrpcError(
                `Apply did not converge: still to do: ${[...again.batch, ...again.batch6][0]}`,
                Code.INTERNAL,
              );
            }
          }
          log.info("state applied", { operations: text.length, exact });
          return { result: stateToWire({ ...after, sysctls: sysctlsOf(after) }), plan: text };
        } catch (err) {
          await restoreState({ ip, sysctl, log }, before, plan.sysctls);
          if (err instanceof IpBatchError) {
            throw new TtrpcError(`Apply: ${err.message}`, codeOfNetError(err), { cause: err });
          }
          throw err;
        }
      }, ctx.signal);
    },
  };
}
