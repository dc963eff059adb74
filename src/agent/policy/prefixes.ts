/**
 * The policy's prefix lists, read once into bytes so that "is this address
 * inside" and "is this prefix listed" cost a set lookup or a few byte
 * compares: a large Apply asks 10,000 times. Addresses are read by the
 * model's parseIp (ipaddr.js for IPv6 and the unusual IPv4 forms, a
 * hand-written dotted quad otherwise) and written back in the model's
 * canonical text, the form every validated route and address already has,
 * so a listed prefix is found by its text. Pure.
 */
import { type Family, maxPrefix, networkText, parseIp } from "../../net/model/address";

interface Net {
  family: Family;
  /** The network's bytes (host bits clear). */
  bytes: number[];
  len: number;
  /** Canonical `network/len`. */
  text: string;
}

/** A CIDR, host bits cleared; undefined when it is not one. */
export function parseCidr(text: string): Net | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const ip = parseIp(text.slice(0, slash));
  const lenText = text.slice(slash + 1);
  if (typeof ip === "string" || !/^\d{1,3}$/.test(lenText)) return undefined;
  const len = Number(lenText);
  if (len > maxPrefix(ip.family)) return undefined;
  const network = networkText(ip.bytes, len);
  const parsed = parseIp(network);
  if (typeof parsed === "string") return undefined;
  return { family: ip.family, bytes: parsed.bytes, len, text: `${network}/${len}` };
}

/** Whether `bytes` (of `family`) lies inside `net`. */
function inside(family: Family, bytes: readonly number[], net: Net): boolean {
  if (family !== net.family) return false;
  const full = net.len >> 3;
  for (let i = 0; i < full; i++) if (bytes[i] !== net.bytes[i]) return false;
  const rest = net.len & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[full] as number) & mask) === net.bytes[full];
}

const MEMO_MAX = 65536;

/** Remembers answers by text, up to {@link MEMO_MAX} (a large Apply repeats its gateways). */
function remember(memo: Map<string, boolean>, key: string, answer: boolean): boolean {
  if (memo.size < MEMO_MAX) memo.set(key, answer);
  return answer;
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
    const addr = parseIp(ip);
    if (typeof addr === "string") return remember(this.memo, ip, false);
    return remember(
      this.memo,
      ip,
      this.nets.some((n) => inside(addr.family, addr.bytes, n)),
    );
  }

  /** Whether the prefix `net` lies inside one of the prefixes (as long or longer). */
  hasNet(net: Net): boolean {
    return this.nets.some((n) => net.len >= n.len && inside(net.family, net.bytes, n));
  }
}

/** The policy's `{exact, within}` for prefixes: listed as it is, or inside one of `within`. */
export class PrefixSet {
  private readonly exact: Set<string>;
  private readonly within: PrefixList;
  private readonly memo = new Map<string, boolean>();

  constructor(set: { exact: readonly string[]; within: readonly string[] }) {
    this.exact = new Set(
      set.exact.map((c) => parseCidr(c)?.text).filter((t): t is string => t !== undefined),
    );
    this.within = new PrefixList(set.within);
  }

  get text(): string {
    const exact = [...this.exact];
    const shown = exact.length > 8 ? [...exact.slice(0, 8), `... ${exact.length - 8} more`] : exact;
    return `exact [${shown.join(", ")}] within ${this.within.text}`;
  }

  /** Whether `cidr` is admitted (a validated route's destination is canonical: one lookup). */
  has(cidr: string): boolean {
    if (this.exact.has(cidr)) return true;
    const known = this.memo.get(cidr);
    if (known !== undefined) return known;
    const net = parseCidr(cidr);
    const ok = net !== undefined && (this.exact.has(net.text) || this.within.hasNet(net));
    return remember(this.memo, cidr, ok);
  }
}

/** The policy's addresses of one family: `exact` as ADDRESS/PREFIX (host bits kept), or a prefix inside `within`. */
export class AddressSet {
  private readonly exact: Set<string>;
  private readonly exactIps: Set<string>;
  private readonly within: PrefixList;
  private readonly memo = new Map<string, boolean>();

  constructor(set: { exact: readonly string[]; within: readonly string[] }) {
    const parsed = set.exact.flatMap((c) => {
      const [ip = "", len] = c.split("/");
      const addr = parseIp(ip);
      return typeof addr === "string" ? [] : [{ ip: addr.text, len }];
    });
    this.exact = new Set(parsed.map((x) => `${x.ip}/${x.len}`));
    this.exactIps = new Set(parsed.map((x) => x.ip));
    this.within = new PrefixList(set.within);
  }

  get text(): string {
    return `exact [${[...this.exact].join(", ")}] within ${this.within.text}`;
  }

  /** Whether the address `ip` with prefix length `len` may be given to a link. */
  has(ip: string, len: number): boolean {
    const key = `${ip}/${len}`;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    const addr = parseIp(ip);
    if (typeof addr === "string") return remember(this.memo, key, false);
    if (this.exact.has(`${addr.text}/${len}`)) return remember(this.memo, key, true);
    const net = { family: addr.family, bytes: addr.bytes, len, text: "" };
    return remember(this.memo, key, this.within.hasNet(net));
  }

  /** Whether `ip` is one of the addresses the set admits (a route's preferred source). */
  hasAddress(ip: string): boolean {
    if (this.exactIps.has(ip)) return true;
    const addr = parseIp(ip);
    if (typeof addr === "string") return false;
    return this.exactIps.has(addr.text) || this.within.hasAddress(ip);
  }
}
