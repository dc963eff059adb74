/**
 * One attempt of an Apply (apply-state.ts), once its plan is admitted and
 * its restore recorded: the plan's batches, the sysctl writes and the read
 * back, and at most one corrective batch when the kernel did what the
 * plan's model did not foresee; before the main batch, the link lines run
 * on their own when the kernel will drop or add routes the model does not
 * follow (settleLinks). Throws {@link NotConverged} when the read back
 * still differs after the corrective batch.
 */
import { PEER_ROUTE_POLL_MS, PEER_ROUTE_WAIT_MS } from "../../common/limits";
import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { DesiredState, FullState } from "../../net/model/full-state";
import { hasPeerRoute, peerRoutes6 } from "../../net/plan/kernel-routes";
import { type ApplyPlan, planApply } from "../../net/plan/plan-apply";
import type { SysctlFs } from "../../net/sysctl/sysctl-fs";
import { ipv6First, readAfterWrites } from "./apply-kernel-steps";
import { deferIpv6, settleRaised } from "./raised-links";

/** What of an Apply's dependencies and run an attempt uses (apply-state.ts ApplyDeps, ApplyRun). */
interface Deps {
  ip: IpRunner;
  sysctl: SysctlFs;
  log: Logger;
  batchRunning?(plan: ApplyPlan): void;
}
interface Run {
  exact: boolean;
  signal?: AbortSignal;
}

/** The read back still differs from the plan after the corrective batch. */
export class NotConverged extends Error {
  constructor(readonly line: string) {
    super(`Apply did not converge: still to do: ${line}`);
  }
}

/**
 * The plan's batches and the read back (one ip process for the main batch
 * and its read; the IPv6 rules read again only when the plan touched
 * them), the sysctl writes, then at most one corrective batch.
 */
export async function attempt(
  deps: Deps,
  first: ApplyPlan,
  before: FullState,
  desired: DesiredState,
  run: Run,
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
  // batch (its process is started by now), not after it: a state's hundreds
  // of keys are then off the call's path (bench/README.md, row 12).
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
  deps: Deps,
  plan: ApplyPlan,
  before: FullState,
  desired: DesiredState,
  run: Run,
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
  const stateOf = (read: Awaited<ReturnType<Deps["ip"]["batchAndRead"]>>): FullState => {
    const { rules4, ...rest } = read;
    return {
      ...rest,
      rules: [...rules4, ...before.rules.filter((r) => r.family === 6)],
      sysctls: before.sysctls,
    };
  };
  let read = await deps.ip.batchAndRead(first, opts);
  if (raised.length > 0) {
    // The raised links ready and their fresh link-locals gone, the link
    // lines planned again (the IPv6 addresses, with nodad) run before the
    // wait for peer routes below: a peer address among them makes one.
    await settleRaised(deps.ip, raised);
    const again = planApply(stateOf(await deps.ip.batchAndRead([], opts)), desired, {
      exact: run.exact,
    });
    read = await deps.ip.batchAndRead(again.links.lines, opts);
  }
  const end = performance.now() + PEER_ROUTE_WAIT_MS;
  while (peers.some((p) => !hasPeerRoute(read.routes, p)) && performance.now() < end) {
    await Bun.sleep(PEER_ROUTE_POLL_MS);
    read = await deps.ip.batchAndRead([], opts);
  }
  return { ...planApply(stateOf(read), desired, { exact: run.exact }), sysctls: plan.sysctls };
}
