/**
 * Which kernel routes a desired route supersedes: one with the destination
 * and link of a kernel-made route takes its place (plan-routes.ts). Pure.
 */
import type { Route } from "../../model/model";

const dstDev = (r: Route) => `${r.family} ${r.dst} ${r.dev}`;

const BESIDE_PREFIX_ROUTES = new Set(["local", "broadcast", "anycast", "multicast"]);

/**
 * Whether a desired route has the destination and link of route `k`. Asked
 * of kernel routes, a handful (the `candidates`): the desired routes are
 * sifted by destination against those first (their `dst` strings are
 * hashed already), so 10,000 desired routes build no key each. Any other
 * route is answered by a scan.
 */
export function supersedeCheck(
  desired: readonly Route[],
  candidates: readonly (readonly Route[])[],
): (k: Route) => boolean {
  const dsts = new Set<string>();
  for (const list of candidates) for (const c of list) if (c.protocol === "kernel") dsts.add(c.dst);
  const desiredDstDev = new Set<string>();
  // An IPv4 local, broadcast, anycast or multicast route sits beside a prefix
  // route of its key (another alias); IPv6 holds one route per key and link.
  const unicast = (r: Route) => r.family === 6 || !BESIDE_PREFIX_ROUTES.has(r.type);
  if (dsts.size > 0)
    for (const r of desired) if (dsts.has(r.dst) && unicast(r)) desiredDstDev.add(dstDev(r));
  return (k) =>
    dsts.has(k.dst)
      ? desiredDstDev.has(dstDev(k))
      : desired.some(
          (r) => unicast(r) && r.family === k.family && r.dst === k.dst && r.dev === k.dev,
        );
}
