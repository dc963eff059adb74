/**
 * Renders planned operations as `ip -batch -` lines, one command a line.
 * Every token is checked against a conservative pattern before it is
 * written, so no value can start a second command, a comment or an option,
 * whatever got past validation.
 */

import type { Nexthop, Route } from "../model/model";
import { attrWords } from "../vocabulary/attrs";
import { NEXTHOP_ATTRS } from "../vocabulary/nexthop-attrs";
import { lockedNames, ROUTE_ATTRS } from "../vocabulary/route-attrs";
import {
  DEFAULT_PROTOCOL,
  DEFAULT_ROUTE_TYPE,
  formatTable,
  formatTos,
  NEXTHOP_DEFAULT_PROTOCOL,
  protocolWord,
  TABLE_MAIN,
} from "../vocabulary/routes";
import type { RouteOp } from "./routes/plan-routes";

/**
 * A value with spaces (a link's alias) in double quotes, which `ip -batch`
 * reads as one word: printable ASCII inside, no quote, backslash (iproute2
 * does not unescape) or `#` (it cuts the line there).
 */
const QUOTED_TOKEN = /^"[\x20-\x7e]*"$/;
const QUOTED_REFUSED = /["'#\\]/;

/** Thrown when a value would not be a single plain token: a bug upstream. */
export class UnsafeTokenError extends Error {
  override readonly name = "UnsafeTokenError";
}

/**
 * Whether `s` is one or more of `A-Za-z0-9_.:/@+=-`, not starting with "-": a loop over
 * the characters (two regex tests on every token of a large plan cost
 * more).
 */
function isPlainToken(s: string): boolean {
  if (s.length === 0 || s.charCodeAt(0) === 0x2d) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok =
      (c >= 0x30 && c <= 0x3a) || // 0-9 :
      (c >= 0x41 && c <= 0x5a) || // A-Z
      (c >= 0x61 && c <= 0x7a) || // a-z
      (c >= 0x2d && c <= 0x2f) || // - . /
      c === 0x5f || // _
      c === 0x40 || // @
      c === 0x2b || // +
      c === 0x3d; // =
    if (!ok) return false;
  }
  return true;
}

/** A token as written, refused unless it is one plain token. */
function token(t: string | number): string {
  // A whole number's text is digits (or 1e+21 and up): plain, nothing to check.
  if (typeof t === "number" && Number.isInteger(t) && t >= 0) return String(t);
  const s = String(t);
  // Only a token starting with a quote can be a quoted one (a plain one has none).
  if (s.charCodeAt(0) === 0x22 && QUOTED_TOKEN.test(s) && !QUOTED_REFUSED.test(s.slice(1, -1)))
    return s;
  if (!isPlainToken(s)) throw new UnsafeTokenError(`refusing to pass ${JSON.stringify(s)} to ip`);
  return s;
}

/** Joins tokens into one batch line, refusing anything but plain tokens. */
export function batchLine(tokens: readonly (string | number)[]): string {
  return tokens.map(token).join(" ");
}

/**
 * The route's selector ("[type] dst") and attributes as text, each value
 * checked in the order it is written (the first refused is the one named).
 * Concatenated, not an array of tokens joined: 10,000 routes are rendered
 * per call.
 */
function routeText(r: Route): string {
  let t = r.type !== DEFAULT_ROUTE_TYPE ? `${token(r.type)} ${token(r.dst)}` : token(r.dst);
  if (r.tos) t += ` tos ${token(formatTos(r.tos))}`;
  if (r.from) t += ` from ${token(r.from)}`;
  if (r.nhid !== undefined) t += ` nhid ${token(r.nhid)}`;
  if (r.gateway) t += ` via ${gateway(r.gateway, r.family)}`;
  if (r.dev) t += ` dev ${token(r.dev)}`;
  if (r.prefsrc) t += ` src ${token(r.prefsrc)}`;
  return t;
}

/** A gateway, `inet6 ADDR` when it is IPv6 on an IPv4 route (RFC 5549). */
function gateway(gw: string, family: number): string {
  return family === 4 && gw.includes(":") ? `inet6 ${token(gw)}` : token(gw);
}

/** A multipath route's paths: `nexthop ...` each, the end of the line (iproute2 reads them last). */
function hopsText(r: Route): string {
  if (r.hops === undefined) return "";
  let t = "";
  for (const h of r.hops) {
    t += " nexthop";
    if (h.gateway) t += ` via ${gateway(h.gateway, r.family)}`;
    t += ` dev ${token(h.dev)} weight ${token(h.weight)}`;
    if (h.onlink) t += " onlink";
  }
  return t;
}

const table = (r: Route) => token(formatTable(r.table ?? TABLE_MAIN));

/** How a route's line ends: the words of `attrs` (the route's, or none), its table, its nexthops. */
function attrsTableHops(r: Route, attrs: Route["attrs"]): string {
  let t = "";
  for (const w of attrWords(ROUTE_ATTRS, attrs)) t += ` ${token(w)}`;
  return `${t} table ${table(r)}${hopsText(r)}`;
}

/** `route replace ...` (or `append`) with every attribute of the route. */
export function renderRouteReplace(r: Route, verb: "replace" | "append" = "replace"): string {
  let t = `route ${token(verb)} ${routeText(r)} scope ${token(r.scope)} metric ${token(r.metric)}`;
  if (r.protocol !== DEFAULT_PROTOCOL) t += ` proto ${token(protocolWord(r.protocol))}`;
  if (r.onlink) t += " onlink";
  if (r.mtu)
    t +=
      r.attrs && lockedNames(r.attrs).includes("mtu")
        ? ` mtu lock ${token(r.mtu)}`
        : ` mtu ${token(r.mtu)}`;
  return t + attrsTableHops(r, r.attrs);
}

/**
 * `route del ...` naming every attribute the kernel can select on. Several
 * routes may share a key and a device (a kernel prefix route and the
 * requested route that replaced its twin on another link), and the kernel
 * deletes the first that matches what is given: key, device and gateway
 * alone can hit the wrong one. Scope, source and protocol make it exact.
 */
export function renderRouteDelete(r: Route): string {
  let t = `route del ${routeText(r)}`;
  // IPv6 keeps routes through no link on lo, and its delete compares no
  // type: naming lo keeps it off a route of the key through a link.
  if (r.family === 6 && !r.dev && !r.hops && r.nhid === undefined) t += " dev lo";
  t += ` scope ${token(r.scope)} metric ${token(r.metric)} proto ${token(protocolWord(r.protocol))}`;
  // IPv4 compares the metrics and realms a delete gives (fib_metrics_match, fib_nh_match).
  return t + attrsTableHops(r, r.family === 4 ? r.attrs : undefined);
}

/**
 * `nexthop replace id N ...` with everything the object has. An IPv6
 * single nexthop without a gateway names `::` as its gateway, the one way
 * a line of a batch without `-6` can give its family (the kernel takes
 * `::` as no gateway); an IPv6 blackhole has no such way (nexthopNeeds6).
 */
export function renderNexthopReplace(n: Nexthop, verb: "replace" | "add" = "replace"): string {
  let t = `nexthop ${token(verb)} id ${token(n.id)}`;
  if (n.group) {
    t += ` group ${n.group.map((m) => (m.weight === 1 ? token(m.id) : `${token(m.id)},${token(m.weight)}`)).join("/")}`;
  } else if (n.blackhole) {
    t += " blackhole";
  } else {
    const gw = n.gateway ?? (n.family === 6 ? "::" : undefined);
    if (gw) t += ` via ${token(gw)}`;
    if (n.dev) t += ` dev ${token(n.dev)}`;
    if (n.onlink) t += " onlink";
  }
  for (const w of attrWords(NEXTHOP_ATTRS, n.attrs)) t += ` ${token(w)}`;
  if (n.protocol !== NEXTHOP_DEFAULT_PROTOCOL) t += ` proto ${token(protocolWord(n.protocol))}`;
  return t;
}

/** Whether a nexthop can only be written by `ip -6 -batch` (an IPv6 blackhole). */
export function nexthopNeeds6(n: Nexthop): boolean {
  return n.blackhole && n.family === 6;
}

export function renderNexthopDelete(n: Pick<Nexthop, "id">): string {
  return `nexthop del id ${token(n.id)}`;
}

export function renderRouteOps(ops: readonly RouteOp[]): string[] {
  return ops.map((o) =>
    o.op === "delete" ? renderRouteDelete(o.route) : renderRouteReplace(o.route, o.op),
  );
}
