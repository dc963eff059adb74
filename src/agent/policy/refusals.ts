/**
 * Calls refused by the policy, counted by rule, for GetMetrics
 * (`netagent_policy_refusals_total{rule="routes.gateways"}`). The rules are
 * the policy's own field names, a fixed set: the map stays small.
 */

const counts = new Map<string, number>();

/** Counts one refused call under `rule`. */
export function countRefusal(rule: string): void {
  counts.set(rule, (counts.get(rule) ?? 0) + 1);
}

/** The counter as Prometheus text lines (HELP and TYPE included, even with no refusal yet). */
export function refusalLines(): string[] {
  return [
    "# HELP netagent_policy_refusals_total Calls the guest's network policy refused, by the rule that refused them.",
    "# TYPE netagent_policy_refusals_total counter",
    ...[...counts].map(([rule, n]) => `netagent_policy_refusals_total{rule="${rule}"} ${n}`),
  ];
}
