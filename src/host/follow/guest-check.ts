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
 * (at most TENTATIVE_WAIT_MS after a sync, before the comparison takes its
 * node-wide slot) and count while they last: an equal guest can use every
 * address its pod can.
 * Before the first sync, one Get first: a guest lacking the pod's
 * addresses is not equal, and needs no complete read to say so.
 */
import type { AgentClient } from "../../client/client";
import type { State } from "../../gen/network_pb";
import { compareBoth, NoCompleteRead } from "../compare/complete-compare";
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

/** One comparison: its differences, one line each. */
async function compareOnce(
  client: AgentClient,
  pod: PodState,
  opts: { netns: string; label: string; timeoutMs: number; waited: UsableWait | undefined },
): Promise<string[]> {
  // Without `waited`: one look at the addresses, no wait.
  const { findings, usable } = await compareBoth(client, {
    ...opts,
    probes: 0,
    tentativeWaitMs: 0,
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
  return out;
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
  opts: { netns: string; label: string; timeoutMs: number; settle: boolean },
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
  // Only after a sync: before the first a difference only means a sync is sent. Outside
  // the slot: the wait polls one cheap listing, and a guest in detection for a second
  // must not hold back other sandboxes' complete comparisons meanwhile. The first
  // comparison takes the wait's outcome instead of reading the addresses again.
  let waited = opts.settle
    ? await waitUntilUsable(() => readAddressesBoth(client, opts.netns, opts.timeoutMs), {
        limitMs: TENTATIVE_WAIT_MS,
      })
    : undefined;
  for (let read = 1; read <= reads; read++) {
    try {
      const once = { ...opts, waited };
      differences = await slot(() => compareOnce(client, pod, once));
      waited = undefined;
    } catch (err) {
      if (err instanceof NoCompleteRead) return { unchecked: err.message };
      throw err;
    }
    if (differences.length === 0 || read === reads) break;
    await Bun.sleep(VERIFY_PAUSE_MS);
  }
  return { differences };
}
