/**
 * What the judge of a lookup's source (source-order.ts, source-rules6.ts)
 * is asked and reads: two answers alike but for the preferred source, and
 * the pod's complete read, where it finds each source's link and the
 * layer-3 domain (VRF) of a link. Pure.
 */
import type { CompleteRead, Json } from "./complete-read";

/** What the judge reads of the pod. */
export type SourceRead = Pick<CompleteRead, "links" | "addresses" | "routes" | "sysctls">;

/** One lookup whose two answers are alike but for the preferred source. */
export interface SourceQuestion {
  /** The destination asked. */
  to: string;
  /** An input lookup (iif): a source is shown only when the route has its own. */
  input: boolean;
  /** The answers' device, gateway and table (alike on both sides). */
  dev: string;
  gateway?: string;
  table?: string;
  /** Each side's preferred source, undefined where it shows none. */
  pod?: string;
  guest?: string;
}

/** A link's addr_info entries, in the kernel's order. */
export const infosOf = (l: Json | undefined): Json[] =>
  Array.isArray(l?.addr_info) ? (l.addr_info as Json[]) : [];

/** An address of the pod: its link and its addr_info. */
export interface Found {
  link: string;
  info: Json;
}

/** Where the pod has `local` as an address of `family`, or undefined. */
export function findAddress(read: SourceRead, family: string, local: string): Found | undefined {
  for (const l of read.addresses) {
    const info = infosOf(l).find((a) => a.family === family && a.local === local);
    if (info) return { link: String(l.ifname), info };
  }
  return undefined;
}

/** The VRF a link is enslaved to, "" for none: the kernel takes a source only within one. */
export function domainOf(read: SourceRead): (link: string) => string {
  const byName = new Map(read.links.map((l) => [String(l.ifname), l]));
  return (link) => {
    const master = byName.get(link)?.master;
    const kind = (byName.get(String(master))?.linkinfo as Json | undefined)?.info_kind;
    return kind === "vrf" ? String(master) : "";
  };
}
