/**
 * Lookups whose source follows the order of links, which a mirror cannot
 * give (MIRROR_DIFFERENCES.lookupSourceOtherLink). A lookup through a link
 * with no address of the lookup's family (`route get X oif net1`, net1
 * without IPv4) takes its preferred source from the other links, the first
 * in the kernel's list of links, which is the order they were made: in the
 * pod, the CNI's; in the guest, the hypervisor's for its NICs and the
 * agent's for the tun devices it makes after them. Neither the agent nor
 * sync decides it, so diff names such links, and a lookup through one that
 * differs in its source alone is listed, not counted. Pure.
 */
import type { Decision } from "../../net/iproute/ip-lookups";
import type { LookupSpec } from "../../net/iproute/route-lookup";
import { isManagedLink } from "../../net/vocabulary/links";
import type { CompleteRead } from "./complete-read";

type Family = "inet" | "inet6";

/** Each managed link's name to the families it has an address of. */
function familiesByLink(read: CompleteRead): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const l of read.links) {
    const name = String(l.ifname);
    if (isManagedLink(name)) out.set(name, new Set());
  }
  for (const l of read.addresses) {
    const set = out.get(String(l.ifname));
    const infos = Array.isArray(l.addr_info) ? (l.addr_info as Record<string, unknown>[]) : [];
    for (const a of infos) set?.add(String(a.family));
  }
  return out;
}

/**
 * The pod's links with no address of a family another of its links has,
 * as lines for diff: lookups through them can differ in their source.
 */
export function sourceOrderNotes(pod: CompleteRead): string[] {
  const families = familiesByLink(pod);
  const out: string[] = [];
  for (const [family, word] of [
    ["inet", "IPv4"],
    ["inet6", "IPv6"],
  ] as const) {
    const some = [...families.values()].some((f) => f.has(family));
    if (!some) continue;
    for (const [name, f] of families) {
      if (f.has(family)) continue;
      out.push(
        `lookups through ${name} (no ${word} address of its own) take their ${word} source from another link, the first in the order the links were made, which in the guest is the hypervisor's: they can differ in the source`,
      );
    }
  }
  return out;
}

/**
 * Whether two decisions of a lookup through a link the pod has no address
 * of its family on differ in the preferred source alone.
 */
export function sourceAloneDiffers(
  lookup: LookupSpec,
  pod: Decision,
  guest: Decision,
  podRead: CompleteRead,
): boolean {
  if (lookup.oif === "" || "error" in pod || "error" in guest) return false;
  const family: Family = lookup.to.includes(":") ? "inet6" : "inet";
  if (familiesByLink(podRead).get(lookup.oif)?.has(family) !== false) return false;
  // The source and the learned exceptions (MIRROR_DIFFERENCES.lookupCache) aside.
  const { prefsrc: _a, cache: _c, ...a } = pod.route;
  const { prefsrc: _b, cache: _d, ...b } = guest.route;
  return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
}

const sorted = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
