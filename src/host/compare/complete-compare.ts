/**
 * diff's complete comparison: both sides read completely
 * (complete-sources.ts) and compared (complete-diff.ts), and with
 * `--probes N` that many lookups drawn from the pod (probes.ts) asked on
 * both sides. An agent without Read cannot be compared completely: that is
 * an error (diff exits 3), never a comparison that leaves the rest out.
 * First, the guest's addresses are given time to leave duplicate address
 * detection (usable-addresses.ts): a guest address still tentative where
 * the pod's is not, when the reads are made, is a difference.
 */
import type { AgentClient } from "../../client/client";
import { compareComplete, type Finding } from "./complete-diff";
import type { CompleteRead } from "./complete-read";
import type { ProbesOutcome } from "./complete-report";
import { readAddressesBoth, readGuestComplete, readPodComplete } from "./complete-sources";
import { lookupText, sameDecision } from "./lookup-compare";
import { guestDecisions, podDecisions } from "./lookups-both";
import { drawProbes } from "./probes";
import { sourceAloneDiffers, sourceOrderNotes } from "./source-order";
import {
  inDetection,
  TENTATIVE_WAIT_MS,
  type Unusable,
  type UsableWait,
  unusableInGuest,
  waitUntilUsable,
} from "./usable-addresses";

export interface CompleteComparison {
  /** What differs, counted. */
  findings: Finding[];
  /** What carrier alone explains (Finding.carrier): named, not counted. */
  carrier: Finding[];
  probes?: ProbesOutcome;
  /** The pod's links lookups through which can differ in their source (source-order.ts): named, not counted. */
  sourceOrder: string[];
  /** The wait for the guest's tentative addresses; `still` as the complete reads found it. */
  usable: UsableWait;
  /** What the complete reads show in duplicate address detection (usable-addresses.ts inDetection), either side. */
  detecting: Unusable[];
  /** Findings, disagreeing lookups and addresses still tentative. */
  differences: number;
}

export class NoCompleteRead extends Error {}

/**
 * For `waited`: no look at the addresses before the complete reads, whose
 * own address listings then say what is tentative (`usable.still`,
 * `detecting`), for a caller that waits only when they show it is needed.
 */
export function notWaited(): UsableWait {
  return { waitedMs: 0, waitedFor: [], still: [] };
}

export async function compareBoth(
  client: AgentClient,
  opts: {
    netns: string;
    label: string;
    probes: number;
    timeoutMs: number;
    /** The longest wait for tentative addresses (TENTATIVE_WAIT_MS; 0: look once). */
    tentativeWaitMs?: number;
    /**
     * The caller waited already (its outcome), or chose not to
     * ({@link notWaited}): no wait, no read of the addresses here.
     */
    waited?: UsableWait;
  },
): Promise<CompleteComparison> {
  const waited =
    opts.waited ??
    (await waitUntilUsable(() => readAddressesBoth(client, opts.netns, opts.timeoutMs), {
      limitMs: opts.tentativeWaitMs ?? TENTATIVE_WAIT_MS,
    }));
  const [pod, guest] = await Promise.all([
    readPodComplete(opts.netns).catch((err: Error) => {
      throw new Error(`reading ${opts.label} on this host: ${err.message}`, { cause: err });
    }),
    readGuestComplete(client, opts.timeoutMs),
  ]);
  if (guest === undefined) {
    throw new NoCompleteRead(
      "could not compare completely: the agent has no netagent.v1.Network Read (an older netagent, or the Kata agent)",
    );
  }
  const all = compareComplete(pod, guest);
  const findings = all.filter((f) => !f.carrier);
  const carrier = all.filter((f) => f.carrier);
  // The verdict rests on these reads: what they show tentative counts.
  const usable = { ...waited, still: unusableInGuest(pod.addresses, guest.addresses) };
  const detecting = inDetection(pod.addresses, guest.addresses);
  const counted = findings.length + usable.still.length;
  const sourceOrder = sourceOrderNotes(pod);
  if (opts.probes === 0)
    return { findings, carrier, sourceOrder, usable, detecting, differences: counted };
  const lookups = drawProbes(pod, opts.probes);
  const [p, g] = await Promise.all([
    podDecisions(opts.netns, lookups),
    guestDecisions(client, lookups, opts.timeoutMs),
  ]);
  const differing = lookups.flatMap((l, i) => {
    const [a, b] = [p[i], g[i]];
    if (!a || !b || sameDecision(a, b)) return [];
    const sourceOnly = sourceAloneDiffers(l, a, b, pod);
    return [{ lookup: lookupText(l), pod: a, guest: b, sourceOnly }];
  });
  const disagreements = differing.filter((d) => !d.sourceOnly).map(({ sourceOnly: _, ...d }) => d);
  const sourceOnly = differing.filter((d) => d.sourceOnly).map(({ sourceOnly: _, ...d }) => d);
  const tentative =
    disagreements.length === 0
      ? []
      : [...tentativeAddresses(pod, "pod"), ...tentativeAddresses(guest, "guest")];
  return {
    findings,
    carrier,
    probes: { asked: lookups.length, disagreements, tentative, sourceOnly },
    sourceOrder,
    usable,
    detecting,
    differences: counted + disagreements.length,
  };
}

/**
 * The addresses of a side still in duplicate address detection ("guest:
 * fe80::1 on eth0"): no source for a lookup until it ends, about a second
 * after the address or its link came up (right after a sync, the guest's
 * own link-local), so lookups differ meanwhile.
 */
export function tentativeAddresses(read: CompleteRead, side: string): string[] {
  const out: string[] = [];
  for (const link of read.addresses) {
    const infos = Array.isArray(link.addr_info)
      ? (link.addr_info as Record<string, unknown>[])
      : [];
    for (const a of infos) {
      if (a.tentative === true) out.push(`${side}: ${String(a.local)} on ${String(link.ifname)}`);
    }
  }
  return out;
}
