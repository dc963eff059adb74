/**
 * The prefix routes the kernel makes for a link's addresses: for an IPv4
 * address a/p (p < 32) on an up link, `net/p dev L proto kernel scope link
 * src a` (the subnet's first address gives src); for an IPv6 address a/p
 * (p < 128), `net/p dev L proto kernel metric 256`. Knowing them lets a
 * route table be reconciled the same way whatever happened before: a kernel
 * route that a request once superseded comes back when no request does.
 */
import { networkText, parseIp } from "./ip";
import { type Link, type Route, routeKey, SCOPE_LINK } from "./model";

export function impliedKernelRoutes(links: readonly Link[]): Route[] {
  const out = new Map<string, Route>();
  for (const link of links) {
    if (link.name === "lo" || !link.flags.includes("UP")) continue;
    for (const a of link.addresses) {
      if (a.noprefixroute) continue;
      if (a.prefix >= (a.family === 4 ? 32 : 128)) continue;
      const parsed = parseIp(a.address);
      if (typeof parsed === "string") continue;
      const dst = `${networkText(parsed.bytes, a.prefix)}/${a.prefix}`;
      const route: Route =
        a.family === 4
          ? {
              family: 4,
              dst,
              dev: link.name,
              prefsrc: a.address,
              scope: SCOPE_LINK,
              metric: 0,
              onlink: false,
              mtu: 0,
              protocol: "kernel",
              type: "unicast",
            }
          : {
              family: 6,
              dst,
              dev: link.name,
              scope: 0,
              metric: 256,
              onlink: false,
              mtu: 0,
              protocol: "kernel",
              type: "unicast",
            };
      // IPv4: one route per subnet per link, from its first (primary) address.
      const key = `${routeKey(route)} ${link.name}`;
      if (!out.has(key)) out.set(key, route);
    }
  }
  return [...out.values()];
}
