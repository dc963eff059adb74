/**
 * The netagent.v1 side of sync, diff and plan: probe the agent once with
 * Get (UNIMPLEMENTED: an agent with the Kata services only), build the
 * Apply request for a pod read completely, and say what the Kata sequence
 * cannot carry when that is all the agent offers.
 */
import { create } from "@bufbuild/protobuf";
import type { AgentClient } from "../../client/client";
import { type ApplyRequest, ApplyRequestSchema, Network, type State } from "../../gen/network_pb";
import type { Sysctl } from "../../net/model/full-state";
import { DEFAULT_RULES, ruleIdentity } from "../../net/plan/rules";
import { normaliseSysctlValue, parseSysctlKey } from "../../net/sysctl/sysctl-keys";
import { formatTable, TABLE_LOCAL, TABLE_MAIN } from "../../net/vocabulary/routes";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { isStateRoute, stateToWire } from "../../wire/state-map";
import { comparable, defaultFor, type PodFullState } from "../pod/pod-state";
import { routeWords, ruleWords, stateRouteView, stateRuleView } from "../print/words";
import { scopeMirror } from "./mirror-scope";

/** The guest's state, or undefined when the agent has no netagent.v1.Network. */
export async function probeNetwork(
  client: AgentClient,
  timeoutMs: number,
): Promise<State | undefined> {
  try {
    return await client.unary(Network.method.get, {}, { timeoutMs });
  } catch (err) {
    if (err instanceof TtrpcError && err.code === Code.UNIMPLEMENTED) return undefined;
    throw err;
  }
}

/**
 * The sysctls to send: the pod's non-default ones, and for each key the
 * guest has away from this host's default where the pod has the default,
 * that default (so a setting the pod dropped leaves the guest too).
 */
function sysctlsToSend(
  pod: PodFullState,
  guest: State,
  fresh: ReadonlyMap<string, string>,
): Sysctl[] {
  const out = [...pod.sysctls];
  const sent = new Set(out.map((s) => s.key));
  const names = new Set(pod.links.map((l) => l.name));
  for (const { key, value } of guest.sysctls) {
    if (sent.has(key) || !comparable(key)) continue;
    const k = parseSysctlKey(key);
    const iface = typeof k === "string" ? undefined : k.iface;
    if (iface !== undefined && iface !== "all" && iface !== "default" && !names.has(iface))
      continue;
    const def = defaultFor(key, fresh);
    if (def === undefined || normaliseSysctlValue(def) === normaliseSysctlValue(value)) continue;
    out.push({ key, value: normaliseSysctlValue(def) });
  }
  return out;
}

/**
 * The Apply request mirroring the pod: its complete state, exact, best
 * effort (what the guest's kernel refuses is left out and listed), and
 * what of the pod it leaves out itself (mirror-scope.ts), one line each.
 */
export function applyRequestFor(
  full: PodFullState,
  guest: State,
  fresh: ReadonlyMap<string, string>,
  dryRun = false,
): { request: ApplyRequest; leftOut: string[] } {
  const { pod, leftOut } = scopeMirror(full, new Set(guest.interfaces.map((i) => i.mac)));
  const desired = stateToWire({ ...pod, sysctls: sysctlsToSend(pod, guest, fresh) });
  const request = create(ApplyRequestSchema, { desired, dryRun, exact: true, bestEffort: true });
  return { request, leftOut };
}

/** What the Kata messages cannot carry of this pod, one line each. */
export function notMirrored(pod: PodFullState): string[] {
  const wire = stateToWire(pod);
  const out: string[] = [];
  for (const r of wire.routes) {
    if (r.table !== TABLE_MAIN && r.table !== TABLE_LOCAL)
      out.push(`route in table ${formatTable(r.table)}: ${routeWords(stateRouteView(r))}`);
    else if (r.type !== 0) out.push(`route of another type: ${routeWords(stateRouteView(r))}`);
  }
  const defaults = new Set(DEFAULT_RULES.map(ruleIdentity));
  for (const r of pod.rules) {
    if (defaults.has(ruleIdentity(r))) continue;
    const w = stateToWire({ links: [], routes: [], rules: [r], neighbors: [], sysctls: [] })
      .rules[0];
    out.push(
      w
        ? `rule ${ruleWords(stateRuleView(w))}`
        : `rule ${r.priority} (${(r.other ?? []).join(", ")})`,
    );
  }
  const mainEmpty = !pod.routes.some(
    (r) => (r.table ?? TABLE_MAIN) === TABLE_MAIN && isStateRoute(r),
  );
  if (mainEmpty && pod.routes.length > 0)
    out.push("the main table is empty (the guest keeps its kernel prefix routes)");
  for (const s of pod.sysctls) out.push(`sysctl ${s.key} = ${s.value}`);
  return out;
}
