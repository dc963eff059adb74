/**
 * sync's check of its own verdict: after an Apply from a namespace, the
 * complete comparison diff makes (complete-compare.ts: everything `ip -d -j`
 * and /proc/sys/net show on both sides, less what legitimately differs),
 * after waiting for the guest's addresses to leave duplicate address
 * detection where the pod's have (usable-addresses.ts: at most
 * TENTATIVE_WAIT_MS). Whatever it still finds, and every guest address
 * still tentative, is listed as not mirrored and the exit says the mirror
 * is incomplete: sync never says "synced" of a guest that is not the pod.
 * A link's carrier and operstate follow a change by up to a second
 * (linkwatch), so findings are read again after a pause before they count.
 * What carrier alone explains is listed apart and does not count.
 */
import type { AgentClient } from "../../client/client";
import { compareBoth, NoCompleteRead } from "../compare/complete-compare";
import type { Finding } from "../compare/complete-diff";
import { findingRow } from "../compare/complete-report";
import {
  TENTATIVE_WAIT_MS,
  type Unusable,
  unusableKey,
  waitedWords,
} from "../compare/usable-addresses";

/** Compares made before findings count, and the pause between them. */
export const VERIFY_READS = 3;
export const VERIFY_PAUSE_MS = 1_000;

export type Verification =
  | { checked: true; findings: string[]; carrier: string[]; waited?: string }
  | { checked: false; why: string; findings: [] };

export async function verifySync(
  client: AgentClient,
  opts: { netns: string; label: string; timeoutMs: number },
): Promise<Verification> {
  let findings: Finding[] = [];
  let carrier: Finding[] = [];
  let waitedFor: Unusable[] = [];
  let still: Unusable[] = [];
  // One budget of TENTATIVE_WAIT_MS for the whole check, shared by its
  // compares: an address can enter detection between two of them (the
  // kernel makes a raised link's link-local a moment after the Apply).
  let waitLeftMs = TENTATIVE_WAIT_MS;
  for (let read = 1; read <= VERIFY_READS; read++) {
    try {
      const cmp = await compareBoth(client, { ...opts, probes: 0, tentativeWaitMs: waitLeftMs });
      ({ findings, carrier } = cmp);
      waitLeftMs = Math.max(0, waitLeftMs - cmp.usable.waitedMs);
      const seen = new Set(waitedFor.map(unusableKey));
      waitedFor = [...waitedFor, ...cmp.usable.waitedFor.filter((u) => !seen.has(unusableKey(u)))];
      still = cmp.usable.still;
    } catch (err) {
      if (err instanceof NoCompleteRead) return { checked: false, why: err.message, findings: [] };
      throw err;
    }
    if (findings.length === 0 || read === VERIFY_READS) break;
    await Bun.sleep(VERIFY_PAUSE_MS);
  }
  const waited = waitedWords({ waitedMs: TENTATIVE_WAIT_MS - waitLeftMs, waitedFor, still });
  return {
    checked: true,
    findings: [...findings.map(findingText), ...still.map(stillTentativeText)],
    carrier: carrier.map(findingText),
    ...(waited ? { waited } : {}),
  };
}

/** One line: what is not mirrored, as diff's row says it, and the guest's side. */
export function findingText(f: Finding): string {
  const row = findingRow(f);
  const what = row.pod.replace(/^not mirrored: /, "");
  return row.guest === "-" || row.guest === "" ? what : `${what} (guest: ${row.guest})`;
}

/** One line for a guest address the pod can use and the guest cannot yet. */
export function stillTentativeText(u: Unusable): string {
  const why = u.dadFailed
    ? "duplicate address detection failed"
    : `duplicate address detection had not ended after ${TENTATIVE_WAIT_MS / 1000} s`;
  return `address ${u.address} on ${u.link}: still tentative (${why}; the pod's is usable)`;
}
