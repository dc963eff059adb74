/**
 * Lookups whose preferred source follows an order or a hop no listing
 * carries, which a mirror cannot give (MIRROR_DIFFERENCES
 * .lookupSourceOtherLink, .lookupSourceMultipathHop). One judge for diff
 * (sourceAloneDiffers) and for the project's generator of pods
 * (test/podgen), given the same question: two answers alike but for the
 * source, and the pod's complete read.
 *
 * IPv4: a link with no primary address of global scope (none at all, or
 * host- or link-scoped ones only: `route get X oif lo`, `oif net1`) gives
 * no source of its own to a route through it; the kernel then walks every
 * link of the same layer-3 domain in the order the links were made and
 * takes the first primary address not of link or host scope. IPv6: the
 * sources of two other links that tie under every rule of the kernel's
 * ranking (source-rules6.ts), the first met kept. In both, the order is
 * the pod's CNI's in the pod; in the guest, the hypervisor's for its NICs
 * and the agent's for the tun devices it makes after them: neither sync
 * nor the agent decides it. A source of a link that could not win, a
 * secondary address, another scope or an address the pod does not have
 * is still a difference. Pure.
 */
import type { Decision } from "../../net/iproute/ip-lookups";
import type { LookupSpec } from "../../net/iproute/route-lookup";
import { isManagedLink } from "../../net/vocabulary/links";
import type { CompleteRead, Json } from "./complete-read";
import {
  domainOf,
  findAddress,
  infosOf,
  type SourceQuestion,
  type SourceRead,
} from "./source-question";
import { appendedHop, tiedByOrder } from "./source-rules6";

export type SourceEntry = "lookupSourceOtherLink" | "lookupSourceMultipathHop";

/** A link's IPv4 address the walk could take: its first primary one of global scope, or of any scope but link and host. */
function walkCandidates(infos: Json[]): string[] {
  const primary = infos.filter((a) => a.family === "inet" && a.secondary !== true);
  const global = primary.find((a) => a.scope === "global");
  const any = primary.find((a) => !["link", "host", "nowhere"].includes(String(a.scope)));
  return [global, any].flatMap((a) => (a ? [String(a.local)] : []));
}

/** Whether both IPv4 sources are what the kernel's walk of the links would take, from two other links. */
function walkedByOrder(q: SourceQuestion, read: SourceRead, domain: (l: string) => string) {
  if (q.input || q.pod === undefined || q.guest === undefined) return false;
  const dev = read.addresses.find((l) => l.ifname === q.dev);
  const own = infosOf(dev).filter((a) => a.family === "inet" && a.secondary !== true);
  if (own.some((a) => a.scope === "global")) return false;
  const links = [q.pod, q.guest].map((s) => findAddress(read, "inet", s)?.link);
  if (links[0] === undefined || links[0] === links[1]) return false;
  return links.every((link, i) => {
    const l = read.addresses.find((x) => x.ifname === link);
    return (
      link !== undefined &&
      link !== q.dev &&
      domain(link) === domain(q.dev) &&
      walkCandidates(infosOf(l)).includes([q.pod, q.guest][i] as string)
    );
  });
}

/** The entry that explains two answers differing in their source alone, if one does. */
export function sourceByOrder(q: SourceQuestion, read: SourceRead): SourceEntry | undefined {
  if (q.pod === q.guest) return undefined;
  if (appendedHop(q, read)) return "lookupSourceMultipathHop";
  const domain = domainOf(read);
  const ordered = q.to.includes(":")
    ? tiedByOrder(q, read, domain)
    : walkedByOrder(q, read, domain);
  return ordered ? "lookupSourceOtherLink" : undefined;
}

/**
 * The pod's links with no source of a family of their own (IPv4: no
 * primary address of global scope; IPv6: none of global scope not
 * deprecated) where another link has one, as lines for diff.
 */
export function sourceOrderNotes(pod: CompleteRead): string[] {
  const out: string[] = [];
  const links = pod.links.map((l) => String(l.ifname)).filter(isManagedLink);
  for (const [family, word] of [
    ["inet", "IPv4"],
    ["inet6", "IPv6"],
  ] as const) {
    const own = (name: string) =>
      infosOf(pod.addresses.find((l) => l.ifname === name)).some(
        (a) =>
          a.family === family &&
          a.scope === "global" &&
          a.secondary !== true &&
          a.deprecated !== true,
      );
    if (!links.some(own)) continue;
    for (const name of links.filter((n) => !own(n))) {
      out.push(
        `lookups through ${name} (no ${word} source of its own) take their ${word} source from another link, the first in the order the links were made, which in the guest is the hypervisor's: they can differ in the source`,
      );
    }
  }
  return out;
}

/** Whether two decisions of a lookup differ in the preferred source alone, as sourceByOrder explains. */
export function sourceAloneDiffers(
  lookup: LookupSpec,
  pod: Decision,
  guest: Decision,
  podRead: CompleteRead,
): boolean {
  if ("error" in pod || "error" in guest) return false;
  // The source and the learned exceptions (MIRROR_DIFFERENCES.lookupCache) aside.
  const { prefsrc: ps, cache: _c, ...a } = pod.route;
  const { prefsrc: gs, cache: _d, ...b } = guest.route;
  if (JSON.stringify(sorted(a)) !== JSON.stringify(sorted(b))) return false;
  const text = (v: unknown) => (typeof v === "string" ? v : undefined);
  const q: SourceQuestion = {
    to: lookup.to,
    input: lookup.iif !== "",
    dev: String(a.dev),
    gateway: text(a.gateway),
    table: text(a.table),
    pod: text(ps),
    guest: text(gs),
  };
  return sourceByOrder(q, podRead) !== undefined;
}

const sorted = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
