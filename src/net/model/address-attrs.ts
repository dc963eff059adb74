/**
 * An address's attributes between the model (typed peer, scope,
 * noprefixroute, metric; the rest a list) and the one list of
 * vocabulary/address-attrs.ts (the wire's, and the `ip` words'), and what
 * the planner compares. Pure.
 *
 * What `ip address replace` changes in place (Linux 6.x, checked in a
 * netns): the metric, the lifetimes and, for IPv6, the flags
 * (noprefixroute, home, mngtmpaddr). Anything else (IPv4 broadcast, label,
 * scope, noprefixroute; a peer of either family) only comes with a new
 * address: a different peer even adds a second one. So an address's
 * identity is its address, prefix, peer and those attributes; the rest is
 * replaced where it stands (an IPv6 address added again would move to the
 * front of its link's list, and the list's order is the kernel's choice of
 * source address).
 */

import { ADDRESS_ATTRS, TYPED_ADDRESS_ATTRS } from "../vocabulary/address-attrs";
import { type Attr, attrWords, canonicalAttrs } from "../vocabulary/attrs";
import type { Address } from "./model";

/** An address as a plan target: the Kata path gives the address alone. */
export type TargetAddress = Pick<Address, "family" | "address" | "prefix"> &
  Partial<Pick<Address, "scope" | "noprefixroute" | "peer" | "metric" | "attrs">>;

/** The whole list, typed fields included, canonical (the wire's). */
export function addressAttrList(a: TargetAddress): Attr[] {
  const out: Attr[] = [...(a.attrs ?? [])];
  if (a.family === 4 && a.scope !== undefined && a.scope !== "global") out.push(["scope", a.scope]);
  if (a.noprefixroute) out.push(["noprefixroute", "on"]);
  if (a.peer !== undefined) out.push(["peer", a.peer]);
  if (a.metric) out.push(["metric", String(a.metric)]);
  return canonicalAttrs(ADDRESS_ATTRS, out);
}

/** A canonical list (validated) as the model's typed fields and the rest. */
export function splitAddressAttrs(
  list: readonly Attr[],
): Pick<Address, "noprefixroute" | "peer" | "metric" | "attrs"> & { scope?: string } {
  const get = (n: string) => list.find(([k]) => k === n)?.[1];
  const rest = list.filter(([n]) => !TYPED_ADDRESS_ATTRS.includes(n));
  const scope = get("scope");
  const peer = get("peer");
  const metric = get("metric");
  return {
    ...(scope !== undefined ? { scope } : {}),
    ...(get("noprefixroute") ? { noprefixroute: true } : {}),
    ...(peer !== undefined ? { peer } : {}),
    ...(metric !== undefined ? { metric: Number(metric) } : {}),
    ...(rest.length ? { attrs: [...rest] } : {}),
  };
}

/** Attributes only a new address changes (see the module comment). */
const FIXED: Record<4 | 6, readonly string[]> = {
  4: ["broadcast", "label", "noprefixroute", "peer", "scope"],
  // nodad (on a link that is down): a replace sets the flag but leaves the address tentative.
  6: ["nodad", "peer"],
};

const LIFETIMES = ["preferred_lft", "valid_lft"];

function text(list: readonly Attr[], keep: (n: string) => boolean): string {
  return list
    .filter(([n]) => keep(n))
    .map(([n, v]) => {
      // a lifetime counts down: finite or 0 (deprecated), never its number
      if (LIFETIMES.includes(n)) return `${n}=${v === "0" ? "0" : "finite"}`;
      return `${n}=${v}`;
    })
    .join(" ");
}

/** What makes two addresses of a link the same address (replace cannot change it). */
export function addressIdentity(a: TargetAddress): string {
  const fixed = FIXED[a.family];
  return `${a.address}/${a.prefix} ${text(addressAttrList(a), (n) => fixed.includes(n))}`;
}

/** The rest, which `addr replace` changes in place; lifetimes as finite or 0. */
export function addressRest(a: TargetAddress): string {
  const fixed = FIXED[a.family];
  return text(addressAttrList(a), (n) => !fixed.includes(n));
}

/**
 * The words after `addr add|replace`: the address (with a peer, the local
 * address alone and the prefix on the peer) and every attribute.
 */
export function addressWords(a: TargetAddress): string[] {
  const list = addressAttrList(a).filter(([n]) => n !== "peer");
  return [...addressSelector(a), ...attrWords(ADDRESS_ATTRS, list)];
}

/**
 * The address as `addr del` must name it: with its peer (IPv4 finds an
 * address by local and peer, and `ip` gives the local one as the peer when
 * none is named: "Address not found").
 */
export function addressSelector(a: TargetAddress): string[] {
  return a.peer === undefined
    ? [`${a.address}/${a.prefix}`]
    : [a.address, "peer", `${a.peer}/${a.prefix}`];
}
