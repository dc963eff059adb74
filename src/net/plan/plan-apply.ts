/**
 * planApply: the one plan of a netagent.v1 Apply. Pure. In order:
 * link lines (names, MTU, ARP, addresses, up), IPv4's local and main
 * tables set apart where the rules ask it (rules.ts splitTablesLines),
 * nexthop objects and route lines of every table (planned against what the link lines will leave:
 * plan-route-state.ts), rule lines
 * (additions before deletions), permanent neighbours; all for one
 * `ip -batch`, except IPv6 rules, which need `ip -6 -batch` (see rules.ts) and run right after it. Then the sysctl writes, after the
 * links have their final names.
 */

import type { DesiredState, FullState, Sysctl } from "../model/full-state";
import {
  normaliseSysctlValue,
  parseSysctlKey,
  setsEveryLink,
  sysctlKeyFor,
} from "../sysctl/sysctl-keys";
import { isManagedLink } from "../vocabulary/links";
import { isProxy } from "../vocabulary/neighbor-attrs";
import { type LinkPhase, planLinkPhase, predictRoutes } from "./plan-link-phase";
import {
  neighborKey,
  neighborRest,
  renderNeighborDelete,
  renderPermanentNeighbor,
} from "./plan-neighbors";
import type { NexthopPlan } from "./plan-nexthops";
import type { BatchParts } from "./plan-parallel";
import { planRouteState } from "./plan-route-state";
import type { RouteOp } from "./routes/plan-routes";
import { IPV6_BATCH, planRules, type RuleOp, renderRuleOps, splitTablesLines } from "./rules";

export interface SysctlWrite extends Sysctl {
  /** The key naming the link by its current name: where the old value is read and restored. */
  restoreKey: string;
  /** The value before, as read (undefined: the key did not exist then). */
  previous: string | undefined;
}

export interface ApplyPlan {
  links: LinkPhase;
  routeOps: RouteOp[];
  nexthopOps: NexthopPlan;
  ruleOps: RuleOp[];
  neighborLines: string[];
  /** Lines for `ip -batch -`, in order. */
  batch: string[];
  /** `batch` in parts whose middle may run in several processes at once (plan-parallel.ts). */
  batchParts?: BatchParts;
  /** Lines for `ip -6 -batch -`, run after `batch`. */
  batch6: string[];
  /** Lines for `ip -6 -batch -`, run before `batch` (IPv6 blackhole nexthop objects). */
  batch6First: string[];
  sysctls: SysctlWrite[];
}

/** A per-interface key with the link's final name replaced by its current one. */
export function currentKey(key: string, formerName: ReadonlyMap<string, string>): string {
  const k = parseSysctlKey(key);
  if (typeof k === "string" || k.iface === undefined) return key;
  const was = formerName.get(k.iface);
  return was === undefined ? key : sysctlKeyFor(k, was);
}

export interface ApplyOptions {
  exact: boolean;
}

export function planApply(
  current: FullState,
  desired: DesiredState,
  options: ApplyOptions,
): ApplyPlan {
  const links = planLinkPhase(current.links, desired.links);
  const predicted = predictRoutes(current.routes, current.links, links);
  const routes = planRouteState(current, predicted, desired, links, options);
  const routeOps = routes.routeOps;
  const ruleOps = planRules(current.rules, desired.rules, { exact: options.exact });
  const neighborLines = planPermanentNeighbors(current, desired, links);
  const ruleLines = renderRuleOps(ruleOps);
  const rules4 = ruleLines.filter((l) => !l.startsWith(IPV6_BATCH));
  const split = splitTablesLines(current.rules, desired.rules);
  const batch = [...links.lines, ...split, ...routes.lines, ...rules4, ...neighborLines];
  const parts = routes.parts;
  const batchParts = parts && {
    before: [...links.lines, ...split, ...parts.before],
    together: parts.together,
    after: [...parts.after, ...rules4, ...neighborLines],
  };
  const batch6 = ruleLines
    .filter((l) => l.startsWith(IPV6_BATCH))
    .map((l) => l.slice(IPV6_BATCH.length));
  const sysctls = planSysctls(current, desired, links);
  return {
    links,
    routeOps,
    nexthopOps: routes.nexthops,
    ruleOps,
    neighborLines,
    batch,
    ...(batchParts ? { batchParts } : {}),
    batch6,
    batch6First: routes.lines6,
    sysctls,
  };
}

const STABLE_SECRET = "net.ipv6.conf.*.stable_secret";
/**
 * The sysctls in the request's order but for what the kernel does with
 * some writes (checked in a netns): a link's stable_secret goes first (the
 * kernel refuses addr_gen_mode 2, stable privacy, on a link without a
 * secret: EINVAL; writing a secret sets that mode itself, and a later mode
 * 3, random, keeps the secret written); then the writes that set every
 * link's value as well (setsEveryLink: forwarding for the namespace, an
 * IPv4 default), so that a link's own value, written after, stays.
 */
function kernelOrder(list: readonly Sysctl[]): readonly Sysctl[] {
  const rank = (s: Sysctl) => {
    if (setsEveryLink(s.key) !== undefined) return 1;
    const k = parseSysctlKey(s.key);
    return typeof k !== "string" && k.pattern === STABLE_SECRET ? 0 : 2;
  };
  if (list.every((s) => rank(s) === 2)) return list;
  // Array.prototype.sort is stable: each rank keeps the request's order.
  return [...list].sort((a, b) => rank(a) - rank(b));
}

/**
 * The sysctl writes: those whose value differs from the current one, in
 * {@link kernelOrder}; and a link's (or default's) value that another
 * write of the plan sets as well (setsEveryLink) is written after it even
 * where it is the current value already.
 */
function planSysctls(current: FullState, desired: DesiredState, links: LinkPhase): SysctlWrite[] {
  const sysctls: SysctlWrite[] = [];
  const overwritten = new Set<string>();
  for (const s of kernelOrder(desired.sysctls)) {
    const restoreKey = currentKey(s.key, links.formerName);
    const previous = current.sysctls.get(restoreKey);
    const k = parseSysctlKey(s.key);
    const setByWide = typeof k !== "string" && overwritten.has(k.pattern);
    const same =
      previous !== undefined && normaliseSysctlValue(previous) === normaliseSysctlValue(s.value);
    if (same && !setByWide) continue;
    const every = setsEveryLink(s.key);
    if (every !== undefined) overwritten.add(every);
    sysctls.push({ ...s, restoreKey, previous });
  }
  return sysctls;
}

/**
 * Permanent and proxy neighbours: the desired ones replaced when they
 * differ (a proxy entry deleted first: its flags stay as they were made),
 * other permanent and proxy ones on managed links deleted.
 */
function planPermanentNeighbors(
  current: FullState,
  desired: DesiredState,
  links: LinkPhase,
): string[] {
  const lines: string[] = [];
  const names = new Map(current.links.map((l) => [l.index, l.name]));
  const finalName = (dev: string) => {
    const l = current.links.find((x) => x.name === dev);
    const p = l && links.predicted.find((x) => x.index === l.index);
    return p?.name ?? names.get(l?.index ?? -1) ?? dev;
  };
  const have = current.neighbors
    .filter(
      (n) =>
        (n.state.includes("PERMANENT") || isProxy(n)) &&
        isManagedLink(n.dev) &&
        !links.downed.has(n.dev) &&
        !(n.family === 6 && links.ipv6Off.has(n.dev)),
    )
    .map((n) => ({ ...n, dev: finalName(n.dev) }));
  const byKey = new Map(have.map((h) => [neighborKey(h), h]));
  const wanted = new Set(desired.neighbors.map(neighborKey));
  for (const n of desired.neighbors) {
    const h = byKey.get(neighborKey(n));
    if (h && neighborRest(h) === neighborRest(n)) continue;
    if (h && isProxy(n)) lines.push(renderNeighborDelete(h));
    lines.push(renderPermanentNeighbor(n));
  }
  for (const h of have) {
    if (!wanted.has(neighborKey(h))) lines.push(renderNeighborDelete(h));
  }
  return lines;
}
