/**
 * The rule behind sync's "verified" and diff's EQUAL: the guest can use
 * every address the pod can use. An IPv6 address is tentative while
 * duplicate address detection runs on it (one to two seconds after it is
 * added or its link comes up: a sync that renames a NIC, or raises it,
 * makes the kernel make the link's link-local again) and it is nobody's
 * source meanwhile, so route lookups in the guest pick other sources than
 * the pod's. A guest address on a mirrored link (a link with the MAC of a
 * pod link) that is tentative where the pod's is not holds the verdict
 * back: it is waited for, by polling both sides' `ip -d -j address` (a
 * read of that one listing: cheap), at most TENTATIVE_WAIT_MS; past that
 * it is named as still tentative and the verdict is not given.
 *
 * The pod's own addresses are waited for the same way: a pod synced right
 * after its links came up (a CNI ADD a moment ago) holds its link-locals
 * tentative too, and "the pod's is tentative too" then excuses the
 * guest's only until the pod's detection ends, a second before the
 * guest's (whose links the sync raised later): a verdict read then would
 * hold for a moment only. So the wait lasts while either side of a
 * mirrored link has an address in detection that is running (the link up
 * with carrier: on a link down or without carrier detection waits for the
 * carrier, for ever, and such an address is judged as it is).
 */
import { isKernelLinkLocal } from "./mirror-differences";

/** The longest wait for the guest's addresses to leave duplicate address detection. */
export const TENTATIVE_WAIT_MS = 3_000;
/** Between two reads of both sides' addresses while waiting. */
const TENTATIVE_POLL_MS = 50;

/** A guest address tentative where the pod's is not; or, while waiting, either side's address in detection. */
export interface Unusable {
  /** The link's name (the guest's, unless `side` says the pod). */
  link: string;
  /** "fe80::1/64". */
  address: string;
  /** Duplicate address detection failed: it stays tentative until configured again. */
  dadFailed: boolean;
  /** "pod": an address of the pod's, waited for (absent: the guest's). */
  side?: "pod";
}

interface AddrInfo {
  local?: unknown;
  prefixlen?: unknown;
  tentative?: unknown;
  dadfailed?: unknown;
}

interface AddrLink {
  ifname?: unknown;
  address?: unknown;
  flags?: unknown;
  addr_info?: unknown;
}

/** Objects only: a guest's listing is whatever it sends. */
const objects = <T>(list: unknown): T[] =>
  Array.isArray(list) ? (list.filter((x) => typeof x === "object" && x !== null) as T[]) : [];
const infos = (l: AddrLink): AddrInfo[] => objects<AddrInfo>(l.addr_info);
const mac = (l: AddrLink) => (typeof l.address === "string" ? l.address.toLowerCase() : "");
const kernelLinkLocal = (a: AddrInfo) =>
  isKernelLinkLocal(String(a.local), typeof a.prefixlen === "number" ? a.prefixlen : undefined);

/**
 * The guest's addresses tentative where the pod's are not, from both
 * sides' `ip -j address` listings. A guest address is excused when the
 * pod's link holds the same address tentative too; the kernel's own
 * link-locals (made from the MAC a link had when IPv6 came up, so the two
 * sides' may differ) are paired with each other: excused when the pod's
 * is tentative too. Links without a MAC, or with one no pod link has, are
 * not mirrored and not judged here.
 */
export function unusableInGuest(pod: readonly unknown[], guest: readonly unknown[]): Unusable[] {
  const podByMac = new Map<string, AddrLink>();
  for (const l of objects<AddrLink>(pod))
    if (mac(l) && !/^[0:]*$/.test(mac(l))) podByMac.set(mac(l), l);
  const out: Unusable[] = [];
  for (const l of objects<AddrLink>(guest)) {
    const twin = podByMac.get(mac(l));
    if (!twin) continue;
    const podTentative = infos(twin).filter((a) => a.tentative === true);
    for (const a of infos(l)) {
      if (a.tentative !== true) continue;
      const excused = podTentative.some((p) =>
        kernelLinkLocal(a)
          ? kernelLinkLocal(p)
          : p.local === a.local && p.prefixlen === a.prefixlen,
      );
      if (excused) continue;
      out.push({
        link: String(l.ifname),
        address: `${String(a.local)}/${String(a.prefixlen)}`,
        dadFailed: a.dadfailed === true,
      });
    }
  }
  return out;
}

/** A link up with carrier: duplicate address detection runs on it now, and ends. */
function detecting(l: AddrLink): boolean {
  const flags = Array.isArray(l.flags) ? l.flags : [];
  return flags.includes("UP") && flags.includes("LOWER_UP");
}

/**
 * Addresses of either side's mirrored links (paired by MAC) whose
 * detection is under way and will end by itself: tentative, not failed,
 * on a link up with carrier. The pod's are marked `side: "pod"`.
 */
export function inDetection(pod: readonly unknown[], guest: readonly unknown[]): Unusable[] {
  const macsOf = (list: readonly unknown[]) => new Set(objects<AddrLink>(list).map(mac));
  const [podMacs, guestMacs] = [macsOf(pod), macsOf(guest)];
  const out: Unusable[] = [];
  const collect = (list: readonly unknown[], twins: Set<string>, side?: "pod") => {
    for (const l of objects<AddrLink>(list)) {
      if (!mac(l) || /^[0:]*$/.test(mac(l)) || !twins.has(mac(l)) || !detecting(l)) continue;
      for (const a of infos(l)) {
        if (a.tentative !== true || a.dadfailed === true) continue;
        const address = `${String(a.local)}/${String(a.prefixlen)}`;
        out.push({ link: String(l.ifname), address, dadFailed: false, ...(side ? { side } : {}) });
      }
    }
  };
  collect(guest, podMacs);
  collect(pod, guestMacs, "pod");
  return out;
}

/** One address of one side, as a key. */
export const unusableKey = (u: Unusable) => `${u.side ?? "guest"}|${u.link}|${u.address}`;

/** What waiting for the guest's addresses came to. */
export interface UsableWait {
  /** How long it waited (0: nothing was tentative at the first read). */
  waitedMs: number;
  /**
   * What the first read found to wait for: guest addresses tentative where
   * the pod's are not, and either side's addresses in detection.
   */
  waitedFor: Unusable[];
  /** What was still so when the wait ended (past TENTATIVE_WAIT_MS, or DAD failed). */
  still: Unusable[];
}

/**
 * Reads both sides' address listings (`read`; undefined: the guest cannot
 * be read so, nothing to wait for) until no guest address is tentative
 * where the pod's is not and no address of either side's mirrored links is
 * in a detection that will end (inDetection), every TENTATIVE_POLL_MS, at
 * most `limitMs`. An address whose detection failed is not waited for: it
 * stays tentative. `still` is what the last read found tentative in the
 * guest where the pod's is not.
 */
export async function waitUntilUsable(
  read: () => Promise<{ pod: unknown[]; guest: unknown[] } | undefined>,
  opts: { limitMs?: number; pollMs?: number } = {},
): Promise<UsableWait> {
  const limitMs = opts.limitMs ?? TENTATIVE_WAIT_MS;
  const start = performance.now();
  let waitedFor: Unusable[] | undefined;
  for (;;) {
    const both = await read();
    const still = both ? unusableInGuest(both.pod, both.guest) : [];
    const pending = both ? inDetection(both.pod, both.guest) : [];
    const now = [...still.filter((u) => !u.dadFailed), ...pending];
    const unique = [...new Map(now.map((u) => [unusableKey(u), u])).values()];
    waitedFor ??= unique;
    const waitedMs = waitedFor.length === 0 ? 0 : performance.now() - start;
    if (unique.length === 0 || waitedMs >= limitMs) return { waitedMs, waitedFor, still };
    await Bun.sleep(Math.min(opts.pollMs ?? TENTATIVE_POLL_MS, limitMs - waitedMs));
  }
}

/** "fe80::1/64 on eth0", with "and" between the last two. */
function unusableWords(list: readonly Unusable[]): string {
  const words = list.map((u) => `${u.address} on ${u.link}${u.dadFailed ? " (DAD failed)" : ""}`);
  return words.length < 2
    ? (words[0] ?? "")
    : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

/**
 * "waited 1.2 s for the guest's fe80::1/64 on eth0 to leave duplicate
 * address detection" ("... for the guest's fe80::1/64 on eth0, and the
 * pod's fe80::1/64 on eth0, to leave ...").
 */
export function waitedWords(w: UsableWait): string | undefined {
  if (w.waitedFor.length === 0) return undefined;
  const s = (w.waitedMs / 1000).toFixed(1);
  const guest = w.waitedFor.filter((u) => u.side !== "pod");
  const pod = w.waitedFor.filter((u) => u.side === "pod");
  const which = [
    guest.length > 0 ? `the guest's ${unusableWords(guest)}` : "",
    pod.length > 0 ? `the pod's ${unusableWords(pod)}` : "",
  ]
    .filter(Boolean)
    .join(", and ");
  const both = guest.length > 0 && pod.length > 0 ? "," : "";
  return w.still.length === 0
    ? `waited ${s} s for ${which}${both} to leave duplicate address detection`
    : `waited ${s} s for ${which}${both} to leave duplicate address detection; still tentative: ${unusableWords(w.still)}`;
}
