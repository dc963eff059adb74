/**
 * planLink: the `ip -batch` lines that give one link (found by MAC) its
 * desired name, MTU, ARP flag, address set and up state. Pure.
 *
 * Renaming needs the link down. When another link holds the wanted name the
 * two swap names through a temporary one, as the Kata agent does for
 * multi-network pods (#6842, #9900), and the other link's up state is kept.
 */
import { type Family, networkText, parseIp } from "./ip";
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

/** A temporary name for the swap, unique per link index and within 15 bytes. */
export function swapName(index: number): string {
  return `na-swap${index}`.slice(0, 15);
}

export function planLink(links: readonly Link[], link: Link, target: LinkTarget): string[] {
  const lines: string[] = [];
  let name = link.name;
  const isUp = link.flags.includes("UP");
  let down = false;
  const setDown = () => {
    if (isUp && !down) lines.push(batchLine(["link", "set", "dev", name, "down"]));
    down = true;
  };

  if (target.name !== "" && target.name !== link.name) {
    const holder = links.find((l) => l.name === target.name && l.index !== link.index);
    if (holder) {
      const tmp = swapName(holder.index);
      const holderUp = holder.flags.includes("UP");
      if (holderUp) lines.push(batchLine(["link", "set", "dev", holder.name, "down"]));
      lines.push(batchLine(["link", "set", "dev", holder.name, "name", tmp]));
      setDown();
      lines.push(batchLine(["link", "set", "dev", name, "name", target.name]));
      lines.push(batchLine(["link", "set", "dev", tmp, "name", link.name]));
      if (holderUp) lines.push(batchLine(["link", "set", "dev", link.name, "up"]));
    } else {
      setDown();
      lines.push(batchLine(["link", "set", "dev", name, "name", target.name]));
    }
    name = target.name;
  }

  if (target.mtu !== 0 && target.mtu !== link.mtu) {
    lines.push(batchLine(["link", "set", "dev", name, "mtu", target.mtu]));
  }
  if (target.noarp !== link.flags.includes("NOARP")) {
    lines.push(batchLine(["link", "set", "dev", name, "arp", target.noarp ? "off" : "on"]));
  }

  const wanted = new Set(target.addresses.map((a) => `${a.address}/${a.prefix}`));
  const have = new Set(link.addresses.map((a) => `${a.address}/${a.prefix}`));
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
  const putBack: string[] = [];
  const removals: string[] = [];
  for (const a of link.addresses) {
    const cidr = `${a.address}/${a.prefix}`;
    if (wanted.has(cidr) && !rebuilt(a)) {
      if (a.family === 4 && thinned.has(subnetOf(a))) putBack.push(cidr);
      continue;
    }
    if (!target.exactAddresses && a.scope !== "global") continue;
    removals.unshift(batchLine(["addr", "del", cidr, "dev", name]));
    if (a.family === 4) thinned.add(subnetOf(a));
  }
  lines.push(...removals);
  for (const cidr of putBack) lines.push(batchLine(["addr", "replace", cidr, "dev", name]));
  for (const a of target.addresses) {
    const cidr = `${a.address}/${a.prefix}`;
    if (have.has(cidr) && !rebuilt(a)) continue;
    // nodad: usable at once instead of tentative for a second or more.
    // An IPv6 link-local address may be the kernel's own EUI-64 one, which
    // it makes again, asynchronously, once a link that went down has
    // carrier: `replace` cannot fail with "address already assigned".
    const linkLocal = a.family === 6 && /^fe[89ab][0-9a-f]:/i.test(a.address);
    const t = ["addr", linkLocal ? "replace" : "add", cidr, "dev", name];
    if (a.family === 6) t.push("nodad");
    lines.push(batchLine(t));
  }

  if (target.up && (down || !isUp)) lines.push(batchLine(["link", "set", "dev", name, "up"]));
  if (!target.up && isUp && !down) lines.push(batchLine(["link", "set", "dev", name, "down"]));
  return lines;
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
