/**
 * UpdateRoutes' list into model routes: every field checked, destinations
 * made canonical, exact duplicates dropped, clashes refused. A request may
 * hold tens of thousands of routes, so the common route (an IPv4 CIDR
 * already canonical, a gateway, a device seen before) costs no temporary
 * arrays, field-path strings or key strings: those are built only for an
 * error. test/unit/validate-routes-oracle.test.ts holds it to the plain
 * version it replaced, answer for answer and error for error.
 */
import { IPFamily, type Route as ProtoRoute } from "../../gen/types_pb";
import {
  defaultDst,
  type Family,
  ipv4NetworkPrefix,
  isNetwork4,
  maxPrefix,
  networkText,
  type ParsedIp,
  parseIp,
  parsePrefix,
} from "../../net/model/address";
import { makeRoute, type Route } from "../../net/model/model";
import { isManagedLink } from "../../net/vocabulary/links";
import {
  DEFAULT_PROTOCOL,
  DEFAULT_ROUTE_TYPE,
  DEFAULT_V6_METRIC,
  RTNH_F_KERNEL_SET,
  RTNH_F_ONLINK,
  SCOPE_UNIVERSE,
} from "../../net/vocabulary/routes";
import { familyFromProto, invalid, validateMtu, validateName, validIp } from "./validate-fields";

/** `routes[i].name`, built only when an error names it. */
const at = (i: number, name: string) => `routes[${i}].${name}`;

/** An address of `family` for field `name` of route `i`; the field's path is built only for an error. */
function address(i: number, name: string, value: string, family: Family): ParsedIp {
  const parsed = parseIp(value);
  if (typeof parsed !== "string" && parsed.family === family) return parsed;
  return validIp(at(i, name), value, family); // throws, naming the field and the value
}

/** The family the text before the first '/' of `s` names, undefined when that is empty. */
function prefixFamily(s: string): Family | undefined {
  const slash = s.indexOf("/");
  if (slash === 0 || s === "") return undefined;
  const colon = s.indexOf(":");
  return colon >= 0 && (slash < 0 || colon < slash) ? 6 : 4;
}

function allZero(bytes: readonly number[]): boolean {
  for (const b of bytes) if (b !== 0) return false;
  return true;
}

/** The canonical destination CIDR of route `i` (host bits cleared, as `ip route` does). */
function canonicalDest(i: number, dest: string, family: Family): string {
  if (dest === "") return defaultDst(family);
  if (family === 4) {
    // A canonical network, its length written without leading zeros (as
    // many characters as String(p)), is its own answer.
    const p = ipv4NetworkPrefix(dest);
    if (p >= 0 && dest.charCodeAt(dest.length - String(p).length - 1) === 0x2f) return dest;
  }
  const slash = dest.indexOf("/");
  const addr = slash < 0 ? dest : dest.slice(0, slash);
  let len: string | undefined;
  if (slash >= 0) {
    if (dest.indexOf("/", slash + 1) >= 0) throw invalid(at(i, "dest"), dest, "is not a CIDR");
    len = dest.slice(slash + 1);
  }
  const a = address(i, "dest", addr, family);
  const prefix = len === undefined ? maxPrefix(family) : parsePrefix(len, family);
  if (typeof prefix === "string") throw invalid(at(i, "dest"), dest, prefix);
  // The Kata agent fails with EINVAL on host bits (#5207); they are cleared here.
  if (family === 4 && isNetwork4(a.bytes, prefix)) {
    // An IPv4 address's text is its dotted quad: a canonical request is its own answer.
    return a.text === addr && len === String(prefix) ? dest : `${a.text}/${prefix}`;
  }
  return `${networkText(a.bytes, prefix)}/${prefix}`;
}

/** Validates UpdateRoutes' list into model routes (deduplicated, checked for clashes). */
export function validateRoutes(routes: readonly ProtoRoute[]): Route[] {
  const out: Route[] = [];
  // Request index of each route in `out`, for a clash's message.
  const outIndex: number[] = [];
  // A route's kernel key on its link (family, dst, metric; the device) comes
  // down to device and dst: dst's text tells the family, which fixes the metric.
  const byDevDst = new Map<string, Map<string, number>>();
  // Tables name a handful of links thousands of times: check each name once.
  const validNames = new Set<string>();
  let lastGw: { text: string; family: Family; gateway: string | undefined } = {
    text: "",
    family: 4,
    gateway: undefined,
  };
  for (let i = 0; i < routes.length; i++) {
    const r = routes[i] as ProtoRoute;
    if (r.device === "")
      throw invalid(at(i, "device"), r.device, "is empty: every route needs a link");
    if (!validNames.has(r.device)) {
      validateName(at(i, "device"), r.device);
      validNames.add(r.device);
    }
    if (!isManagedLink(r.device))
      throw invalid(at(i, "device"), r.device, "is not managed (loopback)");
    const declared =
      r.family === IPFamily.v4
        ? 4
        : r.family === IPFamily.v6
          ? 6
          : familyFromProto(at(i, "family"), r.family);
    const first =
      prefixFamily(r.dest) ??
      (r.gateway === "" ? undefined : r.gateway.includes(":") ? 6 : 4) ??
      prefixFamily(r.source);
    if (declared === 6 && first === 4)
      throw invalid(at(i, "family"), "v6", "does not match its IPv4 addresses");
    const family: Family = first ?? declared;

    const dst = canonicalDest(i, r.dest, family);
    // Tables name a handful of gateways thousands of times: the last one's
    // answer is kept (same text and family, same answer).
    if (r.gateway !== lastGw.text || family !== lastGw.family) {
      const gw = r.gateway ? address(i, "gateway", r.gateway, family) : undefined;
      // `via 0.0.0.0` (or `::`) makes a route without a gateway; said so here,
      // the plan matches what the kernel reads back instead of redoing it.
      lastGw = {
        text: r.gateway,
        family,
        gateway: gw !== undefined && !allZero(gw.bytes) ? gw.text : undefined,
      };
    }
    const gateway = lastGw.gateway;
    let prefsrc: string | undefined;
    if (r.source) {
      const [addr = "", len] = r.source.split("/");
      prefsrc = address(i, "source", addr, family).text || undefined;
      if (len !== undefined && len !== String(maxPrefix(family))) {
        throw invalid(
          at(i, "source"),
          r.source,
          "is a source prefix; only a preferred source address is supported",
        );
      }
    }
    if (r.scope > 255) throw invalid(at(i, "scope"), r.scope, "is not a scope (0-255)");
    if (r.flags > 0xff || (r.flags & ~(RTNH_F_ONLINK | RTNH_F_KERNEL_SET)) !== 0) {
      throw invalid(at(i, "flags"), r.flags, "has unsupported bits (only onlink = 4 is applied)");
    }
    if (r.mtu !== 0) validateMtu(at(i, "mtu"), r.mtu);
    const onlink = (r.flags & RTNH_F_ONLINK) !== 0;
    // IPv6 routes have no scope: the kernel keeps universe whatever is
    // asked, and a 253 kept here would never match the table read back.
    const v4 = family === 4;
    const route = makeRoute(
      family,
      dst,
      gateway,
      r.device,
      prefsrc,
      v4 ? r.scope : SCOPE_UNIVERSE,
      v4 ? 0 : DEFAULT_V6_METRIC,
      onlink,
      r.mtu,
      DEFAULT_PROTOCOL,
      DEFAULT_ROUTE_TYPE,
    );
    // Two links may each hold a route to the same destination (the kernel
    // makes fe80::/64 on every link); on one link a key holds one route.
    let onDev = byDevDst.get(r.device);
    if (onDev === undefined) {
      onDev = new Map();
      byDevDst.set(r.device, onDev);
    }
    const twin = onDev.get(dst);
    if (twin !== undefined) {
      if (JSON.stringify(out[twin]) === JSON.stringify(route)) continue; // exact duplicate: once is enough
      throw invalid(
        at(i, "dest"),
        r.dest || dst,
        `clashes with routes[${outIndex[twin]}]: same destination, metric and device, different route`,
      );
    }
    onDev.set(dst, out.length);
    out.push(route);
    outIndex.push(i);
  }
  return out;
}
