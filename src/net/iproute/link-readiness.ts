/**
 * Whether a link is ready, from what `ip -j addr show` prints of it: a link
 * up with carrier is seen so by the kernel's link-watch work a moment later
 * (its operstate turns UP), and only then does the kernel make its IPv6
 * link-local address and fe80::/64 route (link-ready.ts waits for it).
 */

/** A link of `ip -j addr show`, as far as readiness and addresses go. */
export interface LinkRead {
  ifindex?: unknown;
  ifname?: unknown;
  /** The MAC. */
  address?: unknown;
  operstate?: unknown;
  flags?: unknown;
  addr_info?: {
    local?: unknown;
    prefixlen?: unknown;
    tentative?: unknown;
    dadfailed?: unknown;
    "stable-privacy"?: unknown;
  }[];
}

/** Up with carrier, and not yet seen ready by the kernel's link watch. */
export function awaitingReady(l: LinkRead): boolean {
  const flags = Array.isArray(l.flags) ? l.flags : [];
  const carrier = flags.includes("UP") && flags.includes("LOWER_UP");
  return carrier && l.operstate !== "UP" && l.operstate !== "UNKNOWN";
}

/** Whether a link of an `ip -j addr show` listing is up with carrier and not yet seen ready. */
export function someAwaitReady(listing: unknown): boolean {
  return (
    Array.isArray(listing) &&
    listing.some((l) => typeof l === "object" && l !== null && awaitingReady(l as LinkRead))
  );
}
