/**
 * The kernel's words for links and neighbours, written once: the flag bits
 * as rtnetlink carries them (the Kata protocol passes several through as
 * raw numbers, iproute2 prints them by name), and which link the agent
 * never manages.
 */

/** Link flags (ifi_flags, IFF_* in linux/if.h) by the names iproute2 prints. */
export const IFF = {
  UP: 0x1,
  BROADCAST: 0x2,
  DEBUG: 0x4,
  LOOPBACK: 0x8,
  POINTOPOINT: 0x10,
  NOTRAILERS: 0x20,
  RUNNING: 0x40,
  NOARP: 0x80,
  PROMISC: 0x100,
  ALLMULTI: 0x200,
  MASTER: 0x400,
  SLAVE: 0x800,
  MULTICAST: 0x1000,
  PORTSEL: 0x2000,
  AUTOMEDIA: 0x4000,
  DYNAMIC: 0x8000,
  LOWER_UP: 0x10000,
  DORMANT: 0x20000,
  ECHO: 0x40000,
} as const;

/** IFF_* names to the raw flag word; names it does not know add nothing. */
export function rawFlags(flags: readonly string[]): number {
  let raw = 0;
  for (const f of flags) raw |= IFF[f as keyof typeof IFF] ?? 0;
  return raw >>> 0;
}

/** The raw flag word to IFF_* names, in bit order; bits without a name are left out. */
export function flagNames(raw: number): string[] {
  return Object.entries(IFF)
    .filter(([, bit]) => (raw & bit) !== 0)
    .map(([name]) => name);
}

/** The loopback: its routes and addresses are the kernel's, never the agent's to change. */
export const LOOPBACK = "lo";

/** Whether the agent manages a link (and the routes, neighbours and sysctls of it). */
export function isManagedLink(name: string): boolean {
  return name !== LOOPBACK;
}

/** Neighbour states (ndm_state, NUD_* in linux/neighbour.h), one bit each; the Kata protocol's `state` carries them. */
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

/** Neighbour flags (ndm_flags, NTF_*). */
export const NTF_EXT_LEARNED = 0x10;
export const NTF_ROUTER = 0x80;
