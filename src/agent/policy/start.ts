/**
 * The policy put to work at start: the phase clock (from the state
 * directory), the gate the services call, and in front mode the watch on
 * the calls to the agent behind that starts the running phase.
 */

import type { Logger } from "../../common/log";
import type { AnswerHook } from "../../front/forwarder";
import type { ForwardedCall } from "../../ttrpc/forward";
import { type ContainerWatch, watchContainers } from "./container-watch";
import { PolicyGate } from "./gate";
import type { LoadedPolicy } from "./load";
import { PhaseClock } from "./phase";

export interface StartedPolicy {
  gate: PolicyGate;
  watch: ContainerWatch;
}

/** The gate and the front mode watch of `loaded`; logs where the policy came from and the phase. */
export function startPolicy(loaded: LoadedPolicy, stateDir: string, log: Logger): StartedPolicy {
  const clock = new PhaseClock(loaded.policy, stateDir);
  const gate = new PolicyGate(loaded.policy, clock, log);
  const settleMs = loaded.policy.phases.settleMs;
  const watch = watchContainers(() => {
    if (clock.workloadStarted()) {
      log.info("workload started: the policy's running phase begins after the settling time", {
        settleMs,
      });
    }
  });
  log.info("network policy in force", {
    source: loaded.source,
    phase: clock.phase(),
    ...(clock.workloadStartedAt !== undefined
      ? { workloadStartedAt: clock.workloadStartedAt }
      : {}),
  });
  return { gate, watch };
}

/** The forwarder's hooks: `answer` (GetMetrics) after the policy's watch, when there is one. */
export function frontHooks(
  answer: AnswerHook,
  watch: ContainerWatch | undefined,
): { onAnswer: AnswerHook; onRequest?: (call: ForwardedCall) => void } {
  if (watch === undefined) return { onAnswer: answer };
  return {
    onAnswer: (call, out) => answer(call, watch.onAnswer(call, out)),
    onRequest: watch.onRequest,
  };
}
