/**
 * The route renderer as it was before lines were concatenated rather than
 * joined from token arrays (commit 2803f7a, src/net/render-batch.ts): the
 * oracle render-batch-oracle.test.ts holds the faster one to.
 */
import type { Route } from "../../../src/net/model/model";
import type { RouteOp } from "../../../src/net/plan/routes/plan-routes";
import { formatTable } from "../../../src/net/vocabulary/routes";

const SAFE_TOKEN = /^[A-Za-z0-9_.:/@+=-]+$/;

/** Thrown when a value would not be a single plain token: a bug upstream. */
export class UnsafeTokenError extends Error {
  override readonly name = "UnsafeTokenError";
}

/** Joins tokens into one batch line, refusing anything but plain tokens. */
export function batchLine(tokens: readonly (string | number)[]): string {
  return tokens
    .map((t) => {
      const s = String(t);
      if (!SAFE_TOKEN.test(s) || s.startsWith("-")) {
        throw new UnsafeTokenError(`refusing to pass ${JSON.stringify(s)} to ip`);
      }
      return s;
    })
    .join(" ");
}

function routeSelector(r: Route): (string | number)[] {
  const t: (string | number)[] = [];
  if (r.type !== "unicast") t.push(r.type);
  t.push(r.dst);
  return t;
}

/** `route replace ...` (or `append`) with every attribute of the route. */
export function renderRouteReplace(r: Route, verb: "replace" | "append" = "replace"): string {
  const t = ["route", verb, ...routeSelector(r)];
  if (r.gateway) t.push("via", r.gateway);
  if (r.dev) t.push("dev", r.dev);
  if (r.prefsrc) t.push("src", r.prefsrc);
  t.push("scope", r.scope, "metric", r.metric);
  if (r.protocol !== "boot") t.push("proto", r.protocol);
  if (r.onlink) t.push("onlink");
  if (r.mtu) t.push("mtu", r.mtu);
  t.push("table", r.table === undefined ? "main" : formatTable(r.table));
  return batchLine(t);
}

/**
 * `route del ...` naming every attribute the kernel can select on. Several
 * routes may share a key and a device (a kernel prefix route and the
 * requested route that replaced its twin on another link), and the kernel
 * deletes the first that matches what is given: key, device and gateway
 * alone can hit the wrong one. Scope, source and protocol make it exact.
 */
export function renderRouteDelete(r: Route): string {
  const t = ["route", "del", ...routeSelector(r)];
  if (r.gateway) t.push("via", r.gateway);
  if (r.dev) t.push("dev", r.dev);
  if (r.prefsrc) t.push("src", r.prefsrc);
  t.push("scope", r.scope, "metric", r.metric, "proto", r.protocol);
  t.push("table", r.table === undefined ? "main" : formatTable(r.table));
  return batchLine(t);
}

export function renderRouteOps(ops: readonly RouteOp[]): string[] {
  return ops.map((o) =>
    o.op === "delete" ? renderRouteDelete(o.route) : renderRouteReplace(o.route, o.op),
  );
}
