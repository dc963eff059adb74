/**
 * planLink: the `ip -batch` lines that give one link (found by MAC) its
 * desired name, MTU, ARP flag, address set and up state. Pure.
 *
 * Renaming needs the link down. When another link holds the wanted name the
 * two swap names through a temporary one, as the Kata agent does for
 * multi-network pods (#6842, #9900), and the other link's up state is kept.
 */
import { isLinkLocal6, networkText, parseIp } from "../model/address";
import {
  addressIdentity,
  addressRest,
  addressSelector,
  addressWords,
  type TargetAddress,
} from "../model/address-attrs";
import { type Address, IPV6_MIN_MTU, type Link } from "../model/model";
import type { Attr } from "../vocabulary/attrs";
import { LINK_ATTRS } from "../vocabulary/link-attrs";
import { batchLine } from "./render-batch";

export interface LinkTarget {
  /** "" keeps the current name. */
  name: string;
  /** 0 keeps the current MTU. */
  mtu: number;
  noarp: boolean;
  addresses: readonly TargetAddress[];
  up: boolean;
  /** Link attributes to set; one left out keeps the link's. */
  attrs?: readonly Attr[];
  /**
   * true (netagent.v1 Apply, restores): each address's attributes are its
   * whole truth, a changed one is replaced or the address made again, and
   * IPv6 addresses are added last first, so that the kernel (which lists
   * the newest of a scope first) lists them in the target's order. false
   * (the Kata path): addresses are known by address and prefix, and keep
   * the attributes they have.
   */
  exactAttrs?: boolean;
  /**
   * false (requests): only global-scope addresses not asked for are removed,
   * so the kernel's link-local address stays. true (restores): every
   * address not listed is removed.
   */
  exactAddresses: boolean;
}

/** A temporary name for the swap, unique per link index and within 15 bytes. */
export function swapName(index: number): string {
  return `na-swap${index}`.slice(0, 15);
}

/**
 * The lines, in order: address removals (on the current name, before
 * anything takes the link down: the down drops IPv6 addresses, and an
 * `addr del` after it would fail "address not found"), the swap or the
 * down and rename, MTU, ARP, additions, up.
 *
 * A link that goes down loses its IPv6 addresses (link-local ones even with
 * keep_addr_on_down), and so does one whose MTU falls below 1280: those
 * still wanted are put back with `addr replace`, which also holds where the
 * kernel kept them. A holder that was up gets back its IPv6 addresses but
 * the link-local ones, which the kernel makes again itself.
 */
export function planLink(links: readonly Link[], link: Link, target: LinkTarget): string[] {
  const name = target.name === "" ? link.name : target.name;
  const isUp = link.flags.includes("UP");
  const takeDown = isUp && (name !== link.name || !target.up);
  const mtu = target.mtu === 0 ? link.mtu : target.mtu;
  const lostIpv6 = takeDown || mtu < IPV6_MIN_MTU;
  const addresses = planAddresses(link, target, lostIpv6);
  const lines = [...addresses.removals];

  const holder =
    name === link.name ? undefined : links.find((l) => l.name === name && l.index !== link.index);
  const holderUp = holder?.flags.includes("UP") === true;
  const tmp = holder && swapName(holder.index);
  if (holder && tmp) {
    if (holderUp) lines.push(batchLine(["link", "set", "dev", holder.name, "down"]));
    lines.push(batchLine(["link", "set", "dev", holder.name, "name", tmp]));
  }
  if (takeDown) lines.push(batchLine(["link", "set", "dev", link.name, "down"]));
  if (name !== link.name) lines.push(batchLine(["link", "set", "dev", link.name, "name", name]));
  if (holder && tmp) {
    lines.push(batchLine(["link", "set", "dev", tmp, "name", link.name]));
    if (holderUp) {
      for (const a of holder.addresses) {
        if (a.family === 6 && a.scope !== "link") lines.push(putLine(a, link.name));
      }
      lines.push(batchLine(["link", "set", "dev", link.name, "up"]));
    }
  }

  if (mtu !== link.mtu) lines.push(batchLine(["link", "set", "dev", name, "mtu", mtu]));
  if (target.noarp !== link.flags.includes("NOARP")) {
    lines.push(batchLine(["link", "set", "dev", name, "arp", target.noarp ? "off" : "on"]));
  }
  const attrs = changedLinkAttrs(link, target.attrs);
  if (attrs.length) lines.push(batchLine(["link", "set", "dev", name, ...attrs]));
  const added = addresses.additions(name);
  const comesUp = target.up && (takeDown || !isUp);
  // An IPv6 address added to a link that is down gets its prefix route when
  // the link comes up, without the expiry of a finite lifetime: exact plans
  // add their IPv6 addresses once it is up (all of them, for their order).
  const late = comesUp && target.exactAttrs === true;
  lines.push(...added.filter((a) => !late || a.family === 4).map((a) => a.line));
  if (comesUp) lines.push(batchLine(["link", "set", "dev", name, "up"]));
  if (late) lines.push(...added.filter((a) => a.family === 6).map((a) => a.line));
  return lines;
}

/** The words of the target's link attributes whose values the link does not have. */
function changedLinkAttrs(link: Link, attrs: readonly Attr[] | undefined): string[] {
  const have = new Map(link.attrs ?? []);
  const out: string[] = [];
  for (const a of attrs ?? []) {
    if (have.get(a[0]) !== a[1])
      out.push(...(LINK_ATTRS.get(a[0])?.words(a[1], attrs ?? []) ?? []));
  }
  return out;
}

/**
 * The address lines of planLink: removals (with the IPv4 put-backs they
 * need) on the link's current name, additions on the name it ends with.
 * `lostIpv6`: the plan takes the kernel's IPv6 addresses away.
 */
function planAddresses(
  link: Link,
  target: LinkTarget,
  lostIpv6: boolean,
): { removals: string[]; additions: (name: string) => { family: 4 | 6; line: string }[] } {
  const exact = target.exactAttrs === true;
  const idOf: (a: TargetAddress) => string = exact ? addressIdentity : cidrOf;
  const wanted = new Set(target.addresses.map(idOf));
  const have = new Map(link.addresses.map((a) => [idOf(a), a]));
  // Restores also give each IPv4 subnet its old primary (the kernel's subnet
  // route takes its src from it): a subnet whose first address would differ
  // is rebuilt, every address deleted and added back in the listed order.
  const rebuild = target.exactAddresses
    ? subnetsToRebuild(link.addresses, target.addresses, wanted, idOf)
    : new Set<string>();
  const rebuilt = (a: TargetAddress) => a.family === 4 && rebuild.has(subnetOf(a));
  // Removals first: deleting an IPv4 primary also drops the secondaries of
  // its subnet, which would take a just-added address with it. They go in
  // reverse order, secondaries before their primary (the kernel lists the
  // primary first), or a secondary already dropped would be "not found".
  // A kept address listed after a removed one of its subnet may be gone
  // with it (unless promote_secondaries is set): put back with `replace`.
  const thinned = new Set<string>();
  const putBack: Address[] = [];
  const removals: string[] = [];
  for (const a of link.addresses) {
    if (wanted.has(idOf(a)) && !rebuilt(a)) {
      if (a.family === 4 && thinned.has(subnetOf(a))) putBack.push(a);
      continue;
    }
    // A link that is to be down keeps no address it was not asked for, its
    // link-local neither: the kernel makes one only when a link comes up,
    // or when an address generation sysctl is written (then even while
    // the link is down), which a pod's down link then never had.
    if (!target.exactAddresses && a.scope !== "global" && target.up) continue;
    removals.unshift(batchLine(["addr", "del", ...addressSelector(a), "dev", link.name]));
    if (a.family === 4) thinned.add(subnetOf(a));
  }
  for (const a of putBack) removals.push(putLine(a, link.name));

  // The kernel lists IPv6 addresses of a scope newest first.
  const order = exact
    ? [
        ...target.addresses.filter((a) => a.family === 4),
        ...target.addresses.filter((a) => a.family === 6).reverse(),
      ]
    : target.addresses;
  const additions = (name: string) => {
    const lines: { family: 4 | 6; line: string }[] = [];
    const push = (a: TargetAddress, line: string) => lines.push({ family: a.family, line });
    for (const a of order) {
      const had = have.get(idOf(a));
      if (had && !rebuilt(a) && !(a.family === 6 && lostIpv6)) {
        if (exact && addressRest(had) !== addressRest(a)) push(a, putLine(a, name, target.up));
        continue;
      }
      if (had && a.family === 6) {
        push(a, putLine(exact ? a : had, name, target.up));
        continue;
      }
      // nodad: usable at once instead of tentative for a second or more (on
      // a link that stays down only the address's own: putLine). An IPv6 link-local address may be the kernel's own EUI-64 one, which
      // it makes again, asynchronously, once a link that went down has
      // carrier, and a restore cannot tell whether keep_addr_on_down kept an
      // address on a link it took down: `replace` cannot fail with "address
      // already assigned".
      const linkLocal = a.family === 6 && isLinkLocal6(a.address);
      const verb = linkLocal || (a.family === 6 && target.exactAddresses) ? "replace" : "add";
      const t = ["addr", verb, ...(exact ? addressWords(a) : [cidrOf(a)]), "dev", name];
      if (a.family === 6 && target.up && !(exact && ownNodad(a))) t.push("nodad");
      push(a, batchLine(t));
    }
    return lines;
  };
  return { removals, additions };
}

/**
 * `addr replace` of an address as it was on its link. IPv6 without DAD on
 * a link that is up; on one that stays down as the kernel has it there:
 * tentative, no local route (DAD runs once it comes up), unless the
 * address itself has nodad (carried on a down link: address-attrs.ts).
 */
export function putLine(a: TargetAddress, dev: string, up = true): string {
  const t: (string | number)[] = ["addr", "replace", ...addressWords(a), "dev", dev];
  if (a.family === 6 && up && !ownNodad(a)) t.push("nodad");
  return batchLine(t);
}

/** Whether the address has nodad of its own (its words then write it). */
const ownNodad = (a: TargetAddress) => a.attrs?.some(([n]) => n === "nodad") === true;

function cidrOf(a: Pick<Address, "address" | "prefix">): string {
  return `${a.address}/${a.prefix}`;
}

/**
 * IPv4 subnets whose primary after a plain plan (the first kept address in
 * the link's order, else the first added) is not the target's first.
 */
function subnetsToRebuild(
  have: readonly Address[],
  want: readonly TargetAddress[],
  wanted: ReadonlySet<string>,
  idOf: (a: TargetAddress) => string,
): Set<string> {
  const first = (list: readonly TargetAddress[]) => {
    const m = new Map<string, string>();
    for (const a of list) {
      const k = subnetOf(a);
      if (a.family === 4 && !m.has(k)) m.set(k, `${a.address}/${a.prefix}`);
    }
    return m;
  };
  const kept = first(have.filter((a) => wanted.has(idOf(a))));
  const out = new Set<string>();
  for (const [k, cidr] of first(want)) {
    const primary = kept.get(k);
    if (primary !== undefined && primary !== cidr) out.add(k);
  }
  return out;
}

function subnetOf(a: Pick<Address, "address" | "prefix">): string {
  const ip = parseIp(a.address);
  return typeof ip === "string" ? a.address : `${networkText(ip.bytes, a.prefix)}/${a.prefix}`;
}
