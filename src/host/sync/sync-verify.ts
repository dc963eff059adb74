/**
 * sync's check of its own verdict: after an Apply from a namespace, the
 * complete comparison diff makes (complete-compare.ts: everything `ip -d -j`
 * and /proc/sys/net show on both sides, less what legitimately differs).
 * Whatever it still finds is listed as not mirrored and the exit says the
 * mirror is incomplete: sync never says "synced" of a guest that is not the
 * pod. A link's carrier and operstate follow a change by up to a second
 * (linkwatch), so findings are read again after a pause before they count.
 * What carrier alone explains is listed apart and does not count.
 */
import type { AgentClient } from "../../client/client";
import { compareBoth, NoCompleteRead } from "../compare/complete-compare";
import type { Finding } from "../compare/complete-diff";
import { findingRow } from "../compare/complete-report";

/** Compares made before findings count, and the pause between them. */
export const VERIFY_READS = 3;
export const VERIFY_PAUSE_MS = 1_000;

export type Verification =
  | { checked: true; findings: string[]; carrier: string[] }
  | { checked: false; why: string; findings: [] };

export async function verifySync(
  client: AgentClient,
  opts: { netns: string; label: string; timeoutMs: number },
): Promise<Verification> {
  let findings: Finding[] = [];
  let carrier: Finding[] = [];
  for (let read = 1; read <= VERIFY_READS; read++) {
    try {
      ({ findings, carrier } = await compareBoth(client, { ...opts, probes: 0 }));
    } catch (err) {
      if (err instanceof NoCompleteRead) return { checked: false, why: err.message, findings: [] };
      throw err;
    }
    if (findings.length === 0 || read === VERIFY_READS) break;
    await Bun.sleep(VERIFY_PAUSE_MS);
  }
  return { checked: true, findings: findings.map(findingText), carrier: carrier.map(findingText) };
}

/** One line: what is not mirrored, as diff's row says it, and the guest's side. */
export function findingText(f: Finding): string {
  const row = findingRow(f);
  const what = row.pod.replace(/^not mirrored: /, "");
  return row.guest === "-" || row.guest === "" ? what : `${what} (guest: ${row.guest})`;
}
