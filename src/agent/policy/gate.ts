/**
 * Where the services meet the policy: each network call, once validated
 * (and for a change, once the guest is read and the plan made, before
 * anything changes), is shown to {@link PolicyGate.admit}. A refusal is
 * PERMISSION_DENIED with a message of one fixed form,
 *
 *     policy rule RULE refuses FIELD "VALUE": WHY
 *
 * (RULE is the policy's field, e.g. `routes.gateways`; hosts extract it
 * with {@link POLICY_REFUSAL}), logged at warn and counted by rule. No
 * policy: no gate, the agent as without one.
 */

import type { Logger } from "../../common/log";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { quote } from "../../ttrpc/quote";
import { type CompiledPolicy, checkRequest, compilePolicy, type Phase, type Scope } from "./check";
import type { PhaseClock } from "./phase";
import { countRefusal } from "./refusals";
import type { PolicyCurrent, PolicyRequest, Refusal } from "./request";
import type { Policy } from "./schema";

/** Matches a refusal's status message; group 1 is the rule. */
export const POLICY_REFUSAL = /^policy rule ([A-Za-z0-9.]+) refuses /;

/** A refusal as its status message. */
export function refusalMessage(r: Refusal): string {
  return `policy rule ${r.rule} refuses ${r.field} ${quote(r.value)}: ${r.why}`;
}

export class PolicyGate {
  private readonly compiled: CompiledPolicy;

  constructor(
    readonly policy: Policy,
    private readonly clock: PhaseClock,
    private readonly log: Logger,
  ) {
    this.compiled = compilePolicy(policy);
  }

  /** The phase now (set-up or running). */
  phase(): Phase {
    return this.clock.phase();
  }

  /** Whether the policy allows reads; when not, a change answers nothing read from the guest. */
  get readsAllowed(): boolean {
    return this.policy.reads;
  }

  /**
   * Before the guest is read: every rule but the phase's (which needs the
   * plan to know whether the call changes anything). A NIC or address the
   * policy does not name is refused before any wait for a hot-plugged link
   * or a NOT_FOUND for one that is not there.
   */
  precheck(request: PolicyRequest): void {
    this.admit(request, { links: [] }, "request");
  }

  /**
   * Throws PERMISSION_DENIED when the policy refuses `request` on the guest
   * `current`; `scope` "state" after a {@link precheck} of the same request.
   */
  admit(
    request: PolicyRequest,
    current: PolicyCurrent = { links: [] },
    scope: Scope = "all",
  ): void {
    const phase = this.clock.phase();
    const refusal = checkRequest(this.compiled, request, current, phase, scope);
    if (refusal === undefined) return;
    countRefusal(refusal.rule);
    const message = refusalMessage(refusal);
    this.log.warn("refused by policy", {
      method: request.method,
      rule: refusal.rule,
      field: refusal.field,
      value: refusal.value,
      phase,
    });
    throw new TtrpcError(message, Code.PERMISSION_DENIED);
  }
}
