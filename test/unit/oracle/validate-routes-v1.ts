/**
 * validateRoutes as it was before its allocation-free rewrite (commit
 * 9d2977f, src/agent/validate.ts): the plain statement of the rules, kept
 * as the oracle the fast version is held to (validate-routes-oracle.test.ts).
 */

import {
  invalid,
  validIp as ip,
  resolveFamily,
  validateMtu,
  validateName,
} from "../../../src/agent/validate/validate-fields";
import type { Route as ProtoRoute } from "../../../src/gen/types_pb";
import { defaultDst, maxPrefix, networkText, parsePrefix } from "../../../src/net/model/address";
import { type Route, routeKey } from "../../../src/net/model/model";
import { isManagedLink } from "../../../src/net/vocabulary/links";
import { RTNH_F_ONLINK } from "../../../src/net/vocabulary/routes";

const ROUTE_STATE_FLAGS = 0x1 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80;

export function validateRoutes(routes: readonly ProtoRoute[]): Route[] {
  const out: Route[] = [];
  const byKey = new Map<string, { index: number; route: Route }>();
  // Tables name a handful of links thousands of times: check each name once.
  const validNames = new Set<string>();
  routes.forEach((r, i) => {
    const f = `routes[${i}]`;
    if (r.device === "")
      throw invalid(`${f}.device`, r.device, "is empty: every route needs a link");
    if (!validNames.has(r.device)) {
      validateName(`${f}.device`, r.device);
      validNames.add(r.device);
    }
    if (!isManagedLink(r.device))
      throw invalid(`${f}.device`, r.device, "is not managed (loopback)");
    const srcText = r.source.includes("/") ? (r.source.split("/")[0] as string) : r.source;
    const family = resolveFamily(f, r.family, [r.dest.split("/")[0] as string, r.gateway, srcText]);

    let dst = defaultDst(family);
    if (r.dest !== "") {
      const [addr = "", len, extra] = r.dest.split("/");
      if (extra !== undefined) throw invalid(`${f}.dest`, r.dest, "is not a CIDR");
      const a = ip(`${f}.dest`, addr, family);
      const prefix = len === undefined ? maxPrefix(family) : parsePrefix(len, family);
      if (typeof prefix === "string") throw invalid(`${f}.dest`, r.dest, prefix);
      // Host bits are cleared, as `ip route` does (the Kata agent fails with EINVAL, #5207).
      dst = `${networkText(a.bytes, prefix)}/${prefix}`;
    }
    const gw = r.gateway ? ip(`${f}.gateway`, r.gateway, family) : undefined;
    // `via 0.0.0.0` (or `::`) makes a route without a gateway; said so here,
    // the plan matches what the kernel reads back instead of redoing it.
    const gateway = gw?.bytes.some((b) => b !== 0) ? gw.text : undefined;
    let prefsrc: string | undefined;
    if (r.source) {
      const [addr = "", len] = r.source.split("/");
      prefsrc = ip(`${f}.source`, addr, family).text;
      if (len !== undefined && len !== String(maxPrefix(family))) {
        throw invalid(
          `${f}.source`,
          r.source,
          "is a source prefix; only a preferred source address is supported",
        );
      }
    }
    if (r.scope > 255) throw invalid(`${f}.scope`, r.scope, "is not a scope (0-255)");
    if (r.flags > 0xff || (r.flags & ~(RTNH_F_ONLINK | ROUTE_STATE_FLAGS)) !== 0) {
      throw invalid(`${f}.flags`, r.flags, "has unsupported bits (only onlink = 4 is applied)");
    }
    if (r.mtu !== 0) validateMtu(`${f}.mtu`, r.mtu);
    const route: Route = {
      family,
      dst,
      ...(gateway ? { gateway } : {}),
      dev: r.device,
      ...(prefsrc ? { prefsrc } : {}),
      // IPv6 routes have no scope: the kernel keeps universe whatever is
      // asked, and a 253 kept here would never match the table read back.
      scope: family === 4 ? r.scope : 0,
      metric: family === 4 ? 0 : 1024,
      onlink: (r.flags & RTNH_F_ONLINK) !== 0,
      mtu: r.mtu,
      protocol: "boot",
      type: "unicast",
    };
    // Two links may each hold a route to the same destination (the kernel
    // makes fe80::/64 on every link); on one link a key holds one route.
    const key = `${routeKey(route)} ${route.dev}`;
    const twin = byKey.get(key);
    if (twin) {
      if (JSON.stringify(twin.route) === JSON.stringify(route)) return; // exact duplicate: once is enough
      throw invalid(
        `${f}.dest`,
        r.dest || dst,
        `clashes with routes[${twin.index}]: same destination, metric and device, different route`,
      );
    }
    byKey.set(key, { index: i, route });
    out.push(route);
  });
  return out;
}
