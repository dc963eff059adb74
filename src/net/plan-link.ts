/**
 * planLink: the `ip -batch` lines that give one link (found by MAC) its
 * desired name, MTU, ARP flag, address set and up state. Pure.
 *
 * Renaming needs the link down. When another link holds the wanted name the
 * two swap names through a temporary one, as the Kata agent does for
 * multi-network pods (#6842, #9900), and the other link's up state is kept.
 */
import { type Family, isLinkLocal6, networkText, parseIp } from "./address";
import type { Address, Link } from "./model";
import { batchLine } from "./render-batch";

export interface LinkTarget {
  /** "" keeps the current name. */
  name: string;
  /** 0 keeps the current MTU. */
  mtu: number;
  noarp: boolean;
  addresses: readonly { family: Family; address: string; prefix: number }[];
  up: boolean;
  /**
   * false (requests): only global-scope addresses not asked for are removed,
   * so the kernel's link-local address stays. true (restores): every
   * address not listed is removed.
   */
  exactAddresses: boolean;
}

/** Below this MTU the kernel takes IPv6 off a link: its addresses, routes and neighbours. */
export const IPV6_MIN_MTU = 1280;

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
  lines.push(...addresses.additions(name));
  if (target.up && (takeDown || !isUp)) lines.push(batchLine(["link", "set", "dev", name, "up"]));
  return lines;
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
): { removals: string[]; additions: (name: string) => string[] } {
  const wanted = new Set(target.addresses.map(cidrOf));
  const have = new Map(link.addresses.map((a) => [cidrOf(a), a]));
  // Restores also give each IPv4 subnet its old primary (the kernel's subnet
  // route takes its src from it): a subnet whose first address would differ
  // is rebuilt, every address deleted and added back in the listed order.
  const rebuild = target.exactAddresses
    ? subnetsToRebuild(link.addresses, target.addresses, wanted)
    : new Set<string>();
  const rebuilt = (a: Pick<Address, "family" | "address" | "prefix">) =>
    a.family === 4 && rebuild.has(subnetOf(a));
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
    if (wanted.has(cidrOf(a)) && !rebuilt(a)) {
      if (a.family === 4 && thinned.has(subnetOf(a))) putBack.push(a);
      continue;
    }
    if (!target.exactAddresses && a.scope !== "global") continue;
    removals.unshift(batchLine(["addr", "del", cidrOf(a), "dev", link.name]));
    if (a.family === 4) thinned.add(subnetOf(a));
  }
  for (const a of putBack) removals.push(putLine(a, link.name));

  const additions = (name: string) => {
    const lines: string[] = [];
    for (const a of target.addresses) {
      const had = have.get(cidrOf(a));
      if (had && !rebuilt(a) && !(a.family === 6 && lostIpv6)) continue;
      if (had && a.family === 6) {
        lines.push(putLine(had, name));
        continue;
      }
      // nodad: usable at once instead of tentative for a second or more.
      // An IPv6 link-local address may be the kernel's own EUI-64 one, which
      // it makes again, asynchronously, once a link that went down has
      // carrier, and a restore cannot tell whether keep_addr_on_down kept an
      // address on a link it took down: `replace` cannot fail with "address
      // already assigned".
      const linkLocal = a.family === 6 && isLinkLocal6(a.address);
      const verb = linkLocal || (a.family === 6 && target.exactAddresses) ? "replace" : "add";
      const t = ["addr", verb, cidrOf(a), "dev", name];
      if (a.family === 6) t.push("nodad");
      lines.push(batchLine(t));
    }
    return lines;
  };
  return { removals, additions };
}

/** `addr replace` of an address as it was on its link (IPv6: without DAD). */
export function putLine(a: Address, dev: string): string {
  const t: (string | number)[] = ["addr", "replace", cidrOf(a), "dev", dev];
  if (a.noprefixroute) t.push("noprefixroute");
  if (a.metric !== undefined) t.push("metric", a.metric);
  if (a.family === 6) t.push("nodad");
  return batchLine(t);
}

function cidrOf(a: Pick<Address, "address" | "prefix">): string {
  return `${a.address}/${a.prefix}`;
}

/**
 * IPv4 subnets whose primary after a plain plan (the first kept address in
 * the link's order, else the first added) is not the target's first.
 */
function subnetsToRebuild(
  have: readonly Address[],
  want: readonly Pick<Address, "family" | "address" | "prefix">[],
  wanted: ReadonlySet<string>,
): Set<string> {
  const first = (list: readonly Pick<Address, "family" | "address" | "prefix">[]) => {
    const m = new Map<string, string>();
    for (const a of list) {
      const k = subnetOf(a);
      if (a.family === 4 && !m.has(k)) m.set(k, `${a.address}/${a.prefix}`);
    }
    return m;
  };
  const kept = first(have.filter((a) => wanted.has(`${a.address}/${a.prefix}`)));
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
