/**
 * Strict IP parsing and formatting on top of ipaddr.js: four-part dotted
 * IPv4 only, IPv6 without zone ids, IPv4-mapped IPv6 refused (it would
 * silently change family). Canonical text is what `ip -json` prints.
 */
import ipaddr from "ipaddr.js";

export type Family = 4 | 6;

export interface ParsedIp {
  family: Family;
  bytes: number[];
  /** Canonical text: dotted quad, or RFC 5952 compressed IPv6. */
  text: string;
}

/**
 * The octets of a dotted quad without leading zeros (each 0 or 1-255 with
 * no leading 0: what isValidFourPartDecimal takes, octets <= 255 aside), or
 * undefined. A loop over the characters: a regex match and its captures
 * cost more, and this runs for every route of a large table.
 */
function dottedQuad(text: string): number[] | undefined {
  const bytes: number[] = [];
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      if (digits === 0 || value > 255 || bytes.length === 4) return undefined;
      bytes.push(value);
      value = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits === 1 && value === 0) return undefined; // a leading zero
      if (++digits > 3) return undefined;
      value = value * 10 + (c - 0x30);
    } else {
      return undefined;
    }
  }
  return bytes.length === 4 ? bytes : undefined;
}

/**
 * The prefix length of `text` when it is an IPv4 network written
 * canonically, "a.b.c.d/len": a dotted quad as parseIp takes it, one to
 * three digits of length up to 32 (leading zeros allowed: `len` is the
 * caller's to judge), no host bits; else -1. One pass over the characters,
 * nothing allocated: every route of a 10,000-route table, requested and
 * read back, is one.
 */
export function ipv4NetworkPrefix(text: string): number {
  let addr = 0;
  let value = 0;
  let digits = 0;
  let dots = 0;
  let i = 0;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (digits === 1 && value === 0) return -1; // a leading zero
      if (++digits > 3) return -1;
      value = value * 10 + (c - 0x30);
    } else if (c === 0x2e || c === 0x2f) {
      if (digits === 0 || value > 255) return -1;
      addr = addr * 256 + value;
      value = 0;
      digits = 0;
      if (c === 0x2f) break;
      if (++dots > 3) return -1;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || i === text.length) return -1;
  const lenDigits = text.length - i - 1;
  if (lenDigits < 1 || lenDigits > 3) return -1;
  let prefix = 0;
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c < 0x30 || c > 0x39) return -1;
    prefix = prefix * 10 + (c - 0x30);
  }
  if (prefix > 32) return -1;
  // addr is below 2^32; the host part is what remains below 2^(32 - prefix).
  return addr % 2 ** (32 - prefix) === 0 ? prefix : -1;
}

/** Parses an address; returns a reason string instead of throwing. */
export function parseIp(text: string): ParsedIp | string {
  // Fast path for the common IPv4 case (ipaddr.js costs microseconds per
  // call, which adds up over tens of thousands of routes); same result.
  const quad = dottedQuad(text);
  if (quad) return { family: 4, bytes: quad, text };
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) {
    const bytes = ipaddr.IPv4.parse(text).toByteArray();
    return { family: 4, bytes, text: bytes.join(".") };
  }
  if (text.includes("%")) return "zone ids are not allowed";
  if (!/^[0-9a-fA-F:.]+$/.test(text) || !ipaddr.IPv6.isValid(text)) return "not an IP address";
  const v6 = ipaddr.IPv6.parse(text);
  if (v6.isIPv4MappedAddress()) return "IPv4-mapped IPv6 addresses are not allowed";
  return { family: 6, bytes: v6.toByteArray(), text: v6.toString() };
}

export function maxPrefix(family: Family): number {
  return family === 4 ? 32 : 128;
}

/** Whether `text` is one to three decimal digits (what /^\d{1,3}$/ matches), without a regex. */
export function isDigits3(text: string): boolean {
  if (text.length === 0 || text.length > 3) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** Parses a decimal prefix length "0".."32"/"128"; returns a reason on failure. */
export function parsePrefix(text: string, family: Family): number | string {
  if (!isDigits3(text)) return "not a prefix length";
  const n = Number(text);
  if (n > maxPrefix(family)) return `prefix length above ${maxPrefix(family)}`;
  return n;
}

/** Whether an IPv4 address has no bits set past `prefix`: it is its own network. */
export function isNetwork4(bytes: readonly number[], prefix: number): boolean {
  for (let i = 0; i < 4; i++) {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    const b = bytes[i] as number;
    if ((b & ((0xff << (8 - bits)) & 0xff)) !== b) return false;
  }
  return true;
}

/** The network address of `bytes/prefix` (host bits cleared), as canonical text. */
export function networkText(bytes: readonly number[], prefix: number): string {
  const masked = bytes.map((b, i) => {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - bits)) & 0xff);
  });
  // ipaddr.js prints IPv4 as the dotted quad; skip building its object.
  if (masked.length === 4) return masked.join(".");
  return ipaddr.fromByteArray(masked).toString();
}

export function defaultDst(family: Family): string {
  return family === 4 ? "0.0.0.0/0" : "::/0";
}

/** Whether `ip` lies inside `cidr` (both canonical, same family). */
export function cidrContains(cidr: string, ip: string): boolean {
  try {
    const addr = ipaddr.parse(ip);
    const [range, len] = ipaddr.parseCIDR(cidr);
    return addr.kind() === range.kind() && addr.match(range, len);
  } catch {
    return false;
  }
}

/** Whether `text` is an IPv6 link-local address (fe80::/10), as the kernel scopes them. */
export function isLinkLocal6(text: string): boolean {
  return /^fe[89ab][0-9a-f]:/i.test(text);
}

export function familyOf(text: string): Family {
  return text.includes(":") ? 6 : 4;
}
