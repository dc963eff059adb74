/**
 * netagent.v1.Network: the whole network state in one call. Get reads it;
 * Apply validates, then (serialised with the other writers) runs
 * apply-state.ts: read, plan, batches, sysctl writes, read back, all or
 * nothing, and with best_effort leaving out what the guest's kernel refuses.
 */

import { create } from "@bufbuild/protobuf";
import type { Logger } from "../../common/log";
import { type ApplyRequest, LeftOutSchema, type Network } from "../../gen/network_pb";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { FullState, Sysctl } from "../../net/model/full-state";
import type { ApplyPlan } from "../../net/plan/plan-apply";
import type { SysctlFs } from "../../net/sysctl/sysctl-fs";
import { isManagedLink } from "../../net/vocabulary/links";
import type { ServiceImpl } from "../../ttrpc/service";
import { stateToWire } from "../../wire/state-map";
import { writePlanAhead } from "../../wire/state-writer";
import { applyState } from "../apply/apply-state";
import type { SerialQueue } from "../apply/serial-queue";
import { askApply, askDryRun } from "../policy/ask";
import type { PolicyGate } from "../policy/gate";
import { validateApply } from "../validate/validate-state";
import { VALIDATE_WHILE_READING, validateWhileReading } from "../validate/validate-while-reading";

export interface StateServiceOptions {
  ip: IpRunner;
  sysctl: SysctlFs;
  log: Logger;
  /** The write queue shared with grpc.AgentService: one writer at a time. */
  queue: SerialQueue;
  /** The guest's network policy (none: every valid call goes ahead). */
  gate?: PolicyGate;
}

const isLarge = (request: ApplyRequest) =>
  (request.desired?.routes.length ?? 0) >= VALIDATE_WHILE_READING;

/** The plan as Apply answers it: batch lines (`ip -6` ones marked, in their place), then sysctl writes. */
function planText(plan: ApplyPlan): string[] {
  return [
    ...plan.batch6First.map((l) => `-6 ${l}`),
    ...plan.batch,
    ...plan.batch6.map((l) => `-6 ${l}`),
    ...plan.sysctls.map((s) => `sysctl ${s.key}=${s.value}`),
  ];
}

/** Whether a plan changes anything. */
const planChanges = (plan: ApplyPlan) =>
  plan.batch6First.length + plan.batch.length + plan.batch6.length + plan.sysctls.length > 0;

export function createStateService(options: StateServiceOptions): ServiceImpl<typeof Network> {
  const { ip, sysctl, log, queue } = options;
  // Reads refused: Apply answers neither the state read back nor the plan,
  // both made of the guest as read (withheld.ts).
  const withheld = options.gate !== undefined && !options.gate.readsAllowed;
  return {
    async get(_request, ctx) {
      const s = await ip.readFullState({ signal: ctx.signal });
      const names = s.links.map((l) => l.name).filter(isManagedLink);
      const values = sysctl.readLinks(names);
      const sysctls: Sysctl[] = [...values].map(([key, value]) => ({ key, value }));
      return stateToWire({ ...s, sysctls });
    },

    async apply(request, ctx) {
      const run = {
        exact: request.exact,
        dryRun: request.dryRun,
        bestEffort: request.bestEffort,
        signal: ctx.signal,
      };
      // A large state is validated while ip reads the guest (validate-while-reading.ts).
      const early = isLarge(request) ? undefined : validateApply(request);
      return queue.run(async () => {
        let desired = early;
        let firstRead: ReturnType<IpRunner["readFullState"]> | undefined;
        if (desired === undefined) {
          const checked = validateWhileReading(
            ctx.signal,
            (signal) => ip.readFullState({ signal }),
            () => validateApply(request),
          );
          desired = checked.valid;
          firstRead = checked.reading;
        }
        // A dry run changes nothing and answers what it read: under the rule reads.
        if (run.dryRun) options.gate?.admit(askDryRun());
        // NICs and everything else the policy names are judged before the
        // links are looked for; the phase and the guest's rules once planned (admit).
        options.gate?.precheck(askApply(desired, run.exact, false));
        // The answer's plan lines, listed and written while ip runs the batch.
        let ahead: { plan: ApplyPlan; lines: string[] } | undefined;
        const batchRunning = (plan: ApplyPlan) => {
          ahead = { plan, lines: planText(plan) };
          writePlanAhead(ahead.lines);
        };
        const checked = desired;
        const admit = options.gate
          ? (before: FullState, plan: ApplyPlan) =>
              options.gate?.admit(askApply(checked, run.exact, planChanges(plan)), before, "state")
          : undefined;
        const deps = {
          ip,
          sysctl,
          log,
          record: queue.record.bind(queue),
          firstRead,
          ...(withheld ? {} : { batchRunning }),
          ...(admit ? { admit } : {}),
        };
        const { state, plan, leftOut } = await applyState(deps, desired, run);
        const left = leftOut.map((l) => create(LeftOutSchema, l));
        if (withheld) return { plan: [], leftOut: left };
        const sysctls = [...state.sysctls].map(([key, value]) => ({ key, value }));
        return {
          result: stateToWire({ ...state, sysctls }),
          plan: ahead?.plan === plan ? ahead.lines : planText(plan),
          leftOut: left,
        };
      }, ctx.signal);
    },
  };
}
