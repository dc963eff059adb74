/**
 * Facts about the Linux kernel's network interfaces, written once: flag
 * bits as rtnetlink carries them (the Kata protocol passes several through
 * as raw numbers), which link the agent never manages, and how a route's
 * destination is written canonically.
 */
import {
  defaultDst,
  type Family,
  ipv4NetworkPrefix,
  isDigits3,
  isNetwork4,
  maxPrefix,
  networkText,
  parseIp,
} from "./ip";

/** rtnh_flags: the gateway is on the link, no route to it is needed (`onlink`). */
export const RTNH_F_ONLINK = 0x4;

/** IFF_NOARP in a link's flag word (ifi_flags). */
export const IFF_NOARP = 0x80;

/** Neighbour states (ndm_state), one bit each; the Kata protocol's `state` carries them. */
export const NUD = {
  INCOMPLETE: 0x01,
  REACHABLE: 0x02,
  STALE: 0x04,
  DELAY: 0x08,
  PROBE: 0x10,
  FAILED: 0x20,
  NOARP: 0x40,
  PERMANENT: 0x80,
} as const;

/** Neighbour flags (ndm_flags). */
export const NTF_EXT_LEARNED = 0x10;
export const NTF_ROUTER = 0x80;

/** The loopback: its routes and addresses are the kernel's, never the agent's to change. */
export const LOOPBACK = "lo";

/** Whether the agent manages a link (and the routes and neighbours on it). */
export function isManagedLink(name: string): boolean {
  return name !== LOOPBACK;
}

/**
 * A destination as a canonical CIDR: "" and "default" are the family's
 * default, a bare address is a host route, host bits are cleared.
 * Undefined when it is not an address or prefix of that family.
 */
export function canonicalDst(dest: string, family: Family): string | undefined {
  if (dest === "" || dest === "default") return defaultDst(family);
  // The common case, a canonical IPv4 network, is its own answer.
  if (family === 4 && ipv4NetworkPrefix(dest) >= 0) return dest;
  const slash = dest.indexOf("/");
  const addr = slash < 0 ? dest : dest.slice(0, slash);
  const ip = parseIp(addr);
  if (typeof ip === "string" || ip.family !== family) return undefined;
  const len = slash < 0 ? String(maxPrefix(family)) : dest.slice(slash + 1);
  const prefix = Number(len);
  if (!isDigits3(len) || prefix > maxPrefix(family)) return undefined;
  // A network written canonically is its own answer: no new string for each
  // of the 10,000 routes read back (an IPv4 address's text is its dotted quad).
  if (slash >= 0 && family === 4 && ip.text === addr && isNetwork4(ip.bytes, prefix)) return dest;
  return `${networkText(ip.bytes, prefix)}/${len}`;
}
