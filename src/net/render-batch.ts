/**
 * Renders planned operations as `ip -batch -` lines, one command a line.
 * Every token is checked against a conservative pattern before it is
 * written, so no value can start a second command, a comment or an option,
 * whatever got past validation.
 */

import type { Route } from "./model";
import type { RouteOp } from "./plan-routes";
import { DEFAULT_PROTOCOL, DEFAULT_ROUTE_TYPE, formatTable, TABLE_MAIN } from "./vocabulary/routes";

const SAFE_TOKEN = /^[A-Za-z0-9_.:/@+=-]+$/;

/** Thrown when a value would not be a single plain token: a bug upstream. */
export class UnsafeTokenError extends Error {
  override readonly name = "UnsafeTokenError";
}

/** A token as written, refused unless it is one plain token. */
function token(t: string | number): string {
  const s = String(t);
  if (!SAFE_TOKEN.test(s) || s.startsWith("-")) {
    throw new UnsafeTokenError(`refusing to pass ${JSON.stringify(s)} to ip`);
  }
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
  if (r.gateway) t += ` via ${token(r.gateway)}`;
  if (r.dev) t += ` dev ${token(r.dev)}`;
  if (r.prefsrc) t += ` src ${token(r.prefsrc)}`;
  return t;
}

const table = (r: Route) => token(formatTable(r.table ?? TABLE_MAIN));

/** `route replace ...` (or `append`) with every attribute of the route. */
export function renderRouteReplace(r: Route, verb: "replace" | "append" = "replace"): string {
  let t = `route ${token(verb)} ${routeText(r)} scope ${token(r.scope)} metric ${token(r.metric)}`;
  if (r.protocol !== DEFAULT_PROTOCOL) t += ` proto ${token(r.protocol)}`;
  if (r.onlink) t += " onlink";
  if (r.mtu) t += ` mtu ${token(r.mtu)}`;
  return `${t} table ${table(r)}`;
}

/**
 * `route del ...` naming every attribute the kernel can select on. Several
 * routes may share a key and a device (a kernel prefix route and the
 * requested route that replaced its twin on another link), and the kernel
 * deletes the first that matches what is given: key, device and gateway
 * alone can hit the wrong one. Scope, source and protocol make it exact.
 */
export function renderRouteDelete(r: Route): string {
  return `route del ${routeText(r)} scope ${token(r.scope)} metric ${token(r.metric)} proto ${token(r.protocol)} table ${table(r)}`;
}

export function renderRouteOps(ops: readonly RouteOp[]): string[] {
  return ops.map((o) =>
    o.op === "delete" ? renderRouteDelete(o.route) : renderRouteReplace(o.route, o.op),
  );
}
