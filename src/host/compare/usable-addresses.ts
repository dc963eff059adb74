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
 */
import { isKernelLinkLocal } from "./mirror-differences";

/** The longest wait for the guest's addresses to leave duplicate address detection. */
export const TENTATIVE_WAIT_MS = 3_000;
/** Between two reads of both sides' addresses while waiting. */
export const TENTATIVE_POLL_MS = 50;

/** A guest address tentative where the pod's is not. */
export interface Unusable {
  /** The guest's link name. */
  link: string;
  /** "fe80::1/64". */
  address: string;
  /** Duplicate address detection failed: it stays tentative until configured again. */
  dadFailed: boolean;
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

/** What waiting for the guest's addresses came to. */
export interface UsableWait {
  /** How long it waited (0: nothing was tentative at the first read). */
  waitedMs: number;
  /** What the first read found tentative in the guest where the pod's is not. */
  waitedFor: Unusable[];
  /** What was still so when the wait ended (past TENTATIVE_WAIT_MS, or DAD failed). */
  still: Unusable[];
}

/**
 * Reads both sides' address listings (`read`; undefined: the guest cannot
 * be read so, nothing to wait for) until no guest address is tentative
 * where the pod's is not, every TENTATIVE_POLL_MS, at most `limitMs`. An
 * address whose detection failed is not waited for: it stays tentative.
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
    const now = both ? unusableInGuest(both.pod, both.guest) : [];
    waitedFor ??= now;
    const waitedMs = waitedFor.length === 0 ? 0 : performance.now() - start;
    const settled = now.every((u) => u.dadFailed);
    if (now.length === 0 || settled || waitedMs >= limitMs)
      return { waitedMs, waitedFor, still: now };
    await Bun.sleep(Math.min(opts.pollMs ?? TENTATIVE_POLL_MS, limitMs - waitedMs));
  }
}

/** "fe80::1/64 on eth0", with "and" between the last two. */
export function unusableWords(list: readonly Unusable[]): string {
  const words = list.map((u) => `${u.address} on ${u.link}${u.dadFailed ? " (DAD failed)" : ""}`);
  return words.length < 2
    ? (words[0] ?? "")
    : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

/** "waited 1.2 s for the guest's fe80::1/64 on eth0 to leave duplicate address detection". */
export function waitedWords(w: UsableWait): string | undefined {
  if (w.waitedFor.length === 0) return undefined;
  const s = (w.waitedMs / 1000).toFixed(1);
  const which = unusableWords(w.waitedFor);
  return w.still.length === 0
    ? `waited ${s} s for the guest's ${which} to leave duplicate address detection`
    : `waited ${s} s for the guest's ${which} to leave duplicate address detection; still tentative: ${unusableWords(w.still)}`;
}
