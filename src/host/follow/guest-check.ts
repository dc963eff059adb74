/**
 * Is the guest equal to its pod? For `follow`, before the first sync (a
 * restarted follower sends nothing to a guest already equal) and after each
 * sync (a sandbox is `equal` only on this answer). It is the comparison
 * `diff` makes: both sides read completely (complete-compare.ts, every
 * `ip -d -j` listing and /proc/sys/net, less what legitimately differs)
 * and the packet filters compared (iptables-mirror.ts). A link's carrier
 * follows a change by up to a second, so findings are read again after a
 * pause before they count, as sync's own check does (sync-verify.ts).
 * The guest's addresses tentative where the pod's are not are waited for
 * when a comparison's reads show them (at most TENTATIVE_WAIT_MS after a
 * sync, outside the node-wide slot, then compared again) and count while
 * they last: an equal guest can use every address its pod can.
 * Before the first sync, one Get first: a guest lacking the pod's
 * addresses is not equal, and needs no complete read to say so.
 */
import { setTimeout as delay } from "node:timers/promises";
import type { AgentClient } from "../../client/client";
import type { State } from "../../gen/network_pb";
import { compareBoth, NoCompleteRead, notWaited } from "../compare/complete-compare";
import { readAddressesBoth } from "../compare/complete-sources";
import { TENTATIVE_WAIT_MS, type UsableWait, waitUntilUsable } from "../compare/usable-addresses";
import { probeNetwork } from "../sync/drive-state";
import { compareRules, readGuestRules } from "../sync/iptables-mirror";
import type { PodState } from "../sync/sync-once";
import {
  findingText,
  stillTentativeText,
  VERIFY_PAUSE_MS,
  VERIFY_READS,
} from "../sync/sync-verify";
import type { GuestCheck } from "../watch/pod-sync";

/**
 * A quick negative before the first sync: the pod's addresses the guest
 * lacks, from one netagent.v1 Get (a fresh guest has none of them, and a
 * complete read of both sides would only say so at much greater cost).
 * Empty: nothing missing, or an agent without Get; the complete comparison
 * decides then.
 */
async function missingAddresses(
  client: AgentClient,
  pod: PodState,
  timeoutMs: number,
): Promise<{ missing: string[]; guest?: State }> {
  const guest = await probeNetwork(client, timeoutMs);
  if (guest === undefined) return { missing: [] };
  const have = new Set(
    guest.interfaces.flatMap((i) =>
      i.addresses.map((a) => `${i.mac.toLowerCase()} ${a.address}/${a.prefix}`),
    ),
  );
  const missing: string[] = [];
  for (const i of pod.requests.interfaces) {
    for (const a of i.IPAddresses) {
      const key = `${i.hwAddr.toLowerCase()} ${a.address}/${a.mask}`;
      if (!have.has(key)) {
        missing.push(`address ${a.address}/${a.mask} of ${i.name} missing in the guest`);
      }
    }
  }
  return { missing, guest };
}

/**
 * One comparison: its differences, one line each; and whether its reads
 * show addresses a wait would see usable (in detection on either side, or
 * the guest's tentative where the pod's are not), as a wait before it
 * would have waited for.
 */
async function compareOnce(
  client: AgentClient,
  pod: PodState,
  opts: { netns: string; label: string; timeoutMs: number; waited: UsableWait | undefined },
): Promise<{ differences: string[]; waitFor: boolean }> {
  // Without `waited`: the complete reads alone say what is tentative.
  const { findings, usable, detecting } = await compareBoth(client, {
    ...opts,
    probes: 0,
    waited: opts.waited ?? notWaited(),
  });
  const out = [...findings.map(findingText), ...usable.still.map(stillTentativeText)];
  if (pod.rules !== undefined) {
    const guest = await readGuestRules(client, { timeoutMs: opts.timeoutMs });
    const rules = compareRules(pod.rules, guest);
    if (!rules.equal) {
      out.push(
        rules.unread ?? `packet filter: ${rules.differences} rule line(s) differ from the pod's`,
      );
    }
  }
  const waitFor = detecting.length > 0 || usable.still.some((u) => !u.dadFailed);
  return { differences: out, waitFor };
}

/**
 * Compares guest and pod completely. `settle`: findings are read again
 * (VERIFY_READS times, VERIFY_PAUSE_MS apart) before they count, as after a
 * sync; without it one read decides (before the first sync: a difference
 * only means a sync is sent).
 */
export async function checkGuest(
  client: AgentClient,
  pod: PodState,
  opts: {
    netns: string;
    label: string;
    timeoutMs: number;
    settle: boolean;
    /**
     * Aborted when the pod changes after the sync read it: differences then
     * may be that change, which the next sync sends, so they are not read
     * again after a pause (the check ends as superseded, the next sync starts).
     */
    superseded?: AbortSignal;
  },
  /** Runs each read (the caller's node-wide bound on reads); never held across the pause. */
  slot: <T>(read: () => Promise<T>) => Promise<T> = (read) => read(),
): Promise<GuestCheck> {
  if (!opts.settle) {
    // The Get that found addresses missing serves the sync that follows (no second Get).
    const { missing, guest } = await missingAddresses(client, pod, opts.timeoutMs);
    if (missing.length > 0) return { differences: missing, ...(guest ? { guest } : {}) };
  }
  let differences: string[] = [];
  const reads = opts.settle ? VERIFY_READS : 1;
  let waited: UsableWait | undefined;
  let waitedOnce = false;
  for (let read = 1; ; ) {
    let once: { differences: string[]; waitFor: boolean };
    try {
      const args = { ...opts, waited };
      once = await slot(() => compareOnce(client, pod, args));
      waited = undefined;
    } catch (err) {
      if (err instanceof NoCompleteRead) return { unchecked: err.message };
      throw err;
    }
    // Only after a sync (before the first a difference only means a sync is sent), once:
    // addresses the reads show in detection are waited for, outside the slot (the wait
    // polls one cheap listing, and a guest in detection for a second must not hold back
    // other sandboxes' comparisons meanwhile), and the comparison is made again with the
    // wait's outcome, as if the wait had come first. Most syncs leave nothing in detection
    // (the agent adds IPv6 addresses with nodad) and pay no wait and no extra read.
    if (opts.settle && once.waitFor && !waitedOnce) {
      waitedOnce = true;
      waited = await waitUntilUsable(() => readAddressesBoth(client, opts.netns, opts.timeoutMs), {
        limitMs: TENTATIVE_WAIT_MS,
      });
      continue;
    }
    differences = once.differences;
    if (differences.length === 0) break;
    const { superseded } = opts;
    if (superseded?.aborted) return { differences, superseded: true };
    if (read >= reads) break;
    read++;
    // Rejects as soon as `superseded` aborts.
    const paused = await delay(
      VERIFY_PAUSE_MS,
      true,
      superseded ? { signal: superseded } : {},
    ).catch(() => false);
    if (!paused) return { differences, superseded: true };
  }
  return { differences };
}
