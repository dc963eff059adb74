/**
 * The policy's prefix lists, read once by ipaddr.js into a form that
 * answers "is this address inside" and "is this prefix listed" without
 * parsing the policy again per route: a large Apply asks it 10,000 times.
 * Pure.
 */
import ipaddr from "ipaddr.js";

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

interface Net {
  range: Addr;
  len: number;
  text: string;
}

/** A CIDR as ipaddr.js reads it, host bits cleared; undefined when it is not one. */
export function parseCidr(text: string): Net | undefined {
  try {
    const [addr, len] = ipaddr.parseCIDR(text);
    const range = ipaddr.parse(
      addr.kind() === "ipv4"
        ? ipaddr.IPv4.networkAddressFromCIDR(text).toString()
        : ipaddr.IPv6.networkAddressFromCIDR(text).toString(),
    );
    return { range, len, text: `${range.toString()}/${len}` };
  } catch {
    return undefined;
  }
}

function parseAddr(text: string): Addr | undefined {
  try {
    return ipaddr.parse(text);
  } catch {
    return undefined;
  }
}

/** A list of prefixes: addresses inside any of them. */
export class PrefixList {
  private readonly nets: Net[];
  private readonly memo = new Map<string, boolean>();

  constructor(cidrs: readonly string[]) {
    this.nets = cidrs.map((c) => parseCidr(c)).filter((n): n is Net => n !== undefined);
  }

  /** The list as written back (canonical), for messages. */
  get text(): string {
    return `[${this.nets.map((n) => n.text).join(", ")}]`;
  }

  /** Whether the address `ip` is inside one of the prefixes. */
  hasAddress(ip: string): boolean {
    const known = this.memo.get(ip);
    if (known !== undefined) return known;
    const addr = parseAddr(ip);
    const inside =
      addr !== undefined &&
      this.nets.some((n) => n.range.kind() === addr.kind() && addr.match(n.range, n.len));
    if (this.memo.size < 65536) this.memo.set(ip, inside);
    return inside;
  }

  /** Whether the prefix `ip/len` lies inside one of the prefixes (as long or longer). */
  hasPrefix(ip: string, len: number): boolean {
    const addr = parseAddr(ip);
    return (
      addr !== undefined &&
      this.nets.some(
        (n) => n.range.kind() === addr.kind() && len >= n.len && addr.match(n.range, n.len),
      )
    );
  }
}

/** The policy's `{exact, within}`: a prefix listed as it is, or inside one of `within`. */
export class PrefixSet {
  private readonly exact: Set<string>;
  private readonly within: PrefixList;

  constructor(set: { exact: readonly string[]; within: readonly string[] }) {
    this.exact = new Set(
      set.exact.map((c) => parseCidr(c)?.text).filter((t): t is string => t !== undefined),
    );
    this.within = new PrefixList(set.within);
  }

  get text(): string {
    return `exact [${[...this.exact].join(", ")}] within ${this.within.text}`;
  }

  /** Whether `cidr` (canonical or not) is admitted. */
  has(cidr: string): boolean {
    const net = parseCidr(cidr);
    if (net === undefined) return false;
    return this.exact.has(net.text) || this.within.hasPrefix(net.range.toString(), net.len);
  }

  /** Whether the address `ip` is one of the set's addresses (inside a listed prefix). */
  hasAddress(ip: string): boolean {
    const addr = parseAddr(ip);
    if (addr === undefined) return false;
    for (const e of this.exact) {
      const n = parseCidr(e) as Net;
      if (n.range.kind() === addr.kind() && addr.match(n.range, n.len)) return true;
    }
    return this.within.hasAddress(ip);
  }
}

/** The policy's addresses of one family: `exact` as ADDRESS/PREFIX (host bits kept), or a prefix inside `within`. */
export class AddressSet {
  private readonly exact: Set<string>;
  private readonly exactIps: Set<string>;
  private readonly within: PrefixList;

  constructor(set: { exact: readonly string[]; within: readonly string[] }) {
    const parsed = set.exact
      .map((c) => {
        const [ip, len] = c.split("/");
        const addr = parseAddr(ip ?? "");
        return addr ? { ip: addr.toString(), len } : undefined;
      })
      .filter((x): x is { ip: string; len: string } => x !== undefined);
    this.exact = new Set(parsed.map((x) => `${x.ip}/${x.len}`));
    this.exactIps = new Set(parsed.map((x) => x.ip));
    this.within = new PrefixList(set.within);
  }

  get text(): string {
    return `exact [${[...this.exact].join(", ")}] within ${this.within.text}`;
  }

  /** Whether the address `ip` with prefix length `len` may be given to a link. */
  has(ip: string, len: number): boolean {
    const addr = parseAddr(ip);
    if (addr === undefined) return false;
    return this.exact.has(`${addr.toString()}/${len}`) || this.within.hasPrefix(ip, len);
  }

  /** Whether `ip` is one of the addresses the set admits (a route's preferred source). */
  hasAddress(ip: string): boolean {
    const addr = parseAddr(ip);
    if (addr === undefined) return false;
    return this.exactIps.has(addr.toString()) || this.within.hasAddress(ip);
  }
}
