/**
 * What the kernel does by itself when an Apply writes a sysctl, made part
 * of the plan so that no step fails because the kernel already did it:
 * - IPv6 enabled on a link (disable_ipv6 0) brings its link-local, its
 *   fe80::/64 and table local's IPv6 routes, and is what lets the link take
 *   IPv6 addresses at all; a link's stable_secret and addr_gen_mode make the
 *   kernel replace its link-local with one of its own (stable-privacy), which
 *   an address the plan put there first would stand in for: such writes go
 *   first (a secret before a mode: plan-apply.ts), and the plan is made
 *   again against what the kernel then has (one read);
 * - IPv6 disabled takes the link's IPv6 addresses and routes, and a new
 *   address generation mode (addr_gen_mode, stable_secret) makes a new
 *   link-local even on a link that is down: the sysctls are written after
 *   the batch, and the corrective plan is then made from a read taken after
 *   them, not from the batch's own (which the writes made stale).
 * Kernel facts (Linux 6.x, checked in a netns): test/host/sync-kernel-
 * consequences.test.ts.
 */

import type { IpRunner } from "../../net/iproute/ip-runner";
import type { DesiredState, FullState } from "../../net/model/full-state";
import { type ApplyPlan, planApply, type SysctlWrite } from "../../net/plan/plan-apply";
import type { SysctlFs } from "../../net/sysctl/sysctl-fs";
import { parseSysctlKey } from "../../net/sysctl/sysctl-keys";

/** What of an Apply's dependencies and run these steps use (apply-state.ts). */
interface Deps {
  ip: IpRunner;
  sysctl: SysctlFs;
}
interface Run {
  exact: boolean;
  signal?: AbortSignal;
}

const DISABLE_IPV6 = "net.ipv6.conf.*.disable_ipv6";
/** Keys whose write makes the kernel generate a link's link-local its own way. */
const ADDRESS_GENERATION = new Set([
  "net.ipv6.conf.*.stable_secret",
  "net.ipv6.conf.*.addr_gen_mode",
]);

/**
 * Whether a write goes before the batch: it turns IPv6 on (for a link,
 * `all` or `default`), or sets how the kernel generates a link's addresses.
 */
function goesFirst(w: SysctlWrite): boolean {
  const k = parseSysctlKey(w.key);
  if (typeof k === "string") return false;
  if (ADDRESS_GENERATION.has(k.pattern)) return true;
  return k.pattern === DISABLE_IPV6 && w.value.trim() === "0";
}

/**
 * Writes the plan's sysctls that go first ({@link goesFirst}; by the links'
 * current names), reads, and plans again against that state. The plan's
 * sysctl writes, with their previous values for the restore, stay the
 * first plan's (written again after the batch: the same value). Answers the
 * plan and the state it was made from; unchanged when nothing goes first.
 */
export async function ipv6First(
  deps: Deps,
  plan: ApplyPlan,
  before: FullState,
  desired: DesiredState,
  run: Run,
): Promise<{ plan: ApplyPlan; before: FullState }> {
  const early = plan.sysctls.filter(goesFirst);
  if (early.length === 0) return { plan, before };
  for (const w of early) deps.sysctl.write(w.restoreKey, w.value);
  const { rules4, ...rest } = await deps.ip.batchAndRead([], { signal: run.signal });
  const sysctls = new Map(before.sysctls);
  for (const w of early) sysctls.set(w.restoreKey, w.value);
  const now: FullState = {
    ...rest,
    rules: [...rules4, ...before.rules.filter((r) => r.family === 6)],
    sysctls,
  };
  return {
    plan: { ...planApply(now, desired, { exact: run.exact }), sysctls: plan.sysctls },
    before: now,
  };
}

/** Keys whose write makes the kernel add or take addresses and routes at once. */
const RESHAPING = new Set([
  DISABLE_IPV6,
  "net.ipv6.conf.*.addr_gen_mode",
  "net.ipv6.conf.*.stable_secret",
]);

/** Whether the kernel adds or takes addresses or routes when this write takes effect. */
function reshapes(w: SysctlWrite): boolean {
  const k = parseSysctlKey(w.key);
  return typeof k !== "string" && RESHAPING.has(k.pattern);
}

/**
 * The state after the sysctl writes when one of them reshapes it
 * ({@link reshapes}), read again; else `read`, the batch's own.
 */
export async function readAfterWrites(
  deps: Deps,
  plan: ApplyPlan,
  read: FullState,
  keys: readonly string[],
  run: Run,
): Promise<FullState> {
  if (!plan.sysctls.some(reshapes)) return read;
  return {
    ...(await deps.ip.readFullState({ signal: run.signal })),
    sysctls: deps.sysctl.read(keys),
  };
}
