/**
 * The batch lines route-sim.ts's kernel model takes, read back into routes
 * and delete selectors (`route add|replace|append|del ...` as
 * render-batch.ts writes them), and the errors the model throws.
 */
import { type Attr, type Hop, makeRoute, type Route } from "../../src/net/model/model";
import { ROUTE_ATTRS } from "../../src/net/vocabulary/route-attrs";
import { parseTos, protocolName } from "../../src/net/vocabulary/routes";

export class SimError extends Error {
  override readonly name = "SimError";

  /** What iproute2 would print on stderr for it. */
  constructor(
    message: string,
    readonly stderr = "",
  ) {
    super(message);
  }
}

export interface DeleteSelector {
  attrs?: Attr[];
  type?: string;
  dst: string;
  tos?: number;
  from?: string;
  nhid?: number;
  gateway?: string;
  dev?: string;
  hops?: Hop[];
  prefsrc?: string;
  scope?: number;
  metric: number;
  protocol?: string;
}

/** A route's (gateway, link) pairs: its paths, or itself. */
export function paths(
  r: Pick<Route, "gateway" | "dev" | "hops">,
): { gateway?: string; dev: string }[] {
  return r.hops ?? [{ ...(r.gateway ? { gateway: r.gateway } : {}), dev: r.dev }];
}

export function sameHopList(a: readonly Hop[] | undefined, b: readonly Hop[] | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** Reads `via [inet6] ADDR` at t[i] (after "via"); the new index and the address. */
function via(t: string[], i: number): [number, string] {
  if (t[i] === "inet6") return [i + 2, t[i + 1] ?? ""];
  return [i + 1, t[i] ?? ""];
}

/** `nexthop via G dev D weight W [onlink]` ... to the end of the line, from t[i]. */
function parseHops(t: string[], i: number): Hop[] {
  const hops: Hop[] = [];
  while (i < t.length) {
    if (t[i++] !== "nexthop") throw new SimError(`expected nexthop in ${t.join(" ")}`);
    const h: Hop = { dev: "", weight: 1, onlink: false };
    while (i < t.length && t[i] !== "nexthop") {
      const k = t[i++];
      if (k === "onlink") h.onlink = true;
      else if (k === "via") [i, h.gateway] = via(t, i);
      else if (k === "dev") h.dev = t[i++] ?? "";
      else if (k === "weight") h.weight = Number(t[i++]);
      else throw new SimError(`unknown path token ${k} in ${t.join(" ")}`);
    }
    hops.push(h.gateway === undefined ? h : { gateway: h.gateway, ...h });
  }
  return hops;
}

/** A rendered `route replace|append` line back into a route. */
export function parseRouteLine(line: string): Route {
  const t = line.split(" ");
  let i = 2;
  const type = /^[a-z]+$/.test(t[i] ?? "") ? (t[i++] as string) : "unicast";
  const dst = t[i++] ?? "";
  const family = dst.includes(":") ? 6 : 4;
  const r: Route = makeRoute(family, dst, undefined, "", undefined, 0, 0, false, 0, "boot", type);
  const attrs: Attr[] = [];
  const locks: string[] = [];
  while (i < t.length) {
    const k = t[i++] as string;
    if (k === "onlink") {
      r.onlink = true;
      continue;
    }
    if (k === "nexthop") {
      r.hops = parseHops(t, i - 1);
      break;
    }
    if (k === "via") {
      [i, r.gateway] = via(t, i);
      continue;
    }
    if (t[i] === "lock") {
      locks.push(k);
      i++;
    }
    const v = t[i++] ?? "";
    if (k === "dev") r.dev = v;
    else if (k === "src") r.prefsrc = v;
    else if (k === "scope") r.scope = Number(v);
    else if (k === "metric") r.metric = Number(v);
    else if (k === "proto") r.protocol = protocolName(v);
    else if (k === "mtu") r.mtu = Number(v);
    else if (k === "tos") r.tos = parseTos(v);
    else if (k === "from") r.from = v;
    else if (k === "nhid") r.nhid = Number(v);
    else if (ROUTE_ATTRS.has(k)) attrs.push([k, v]);
    else if (k !== "table" || v !== "main") throw new SimError(`unknown token ${k} in ${line}`);
  }
  if (locks.length) attrs.push(["lock", locks.sort().join(",")]);
  if (attrs.length) r.attrs = attrs.sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return r;
}

/** What a rendered `route del` line asks the kernel for. */
export function parseDelete(line: string): DeleteSelector {
  const t = line.split(" ");
  if (t[0] !== "route" || t[1] !== "del") throw new SimError(`not a route del: ${line}`);
  let i = 2;
  const type = /^[a-z]+$/.test(t[i] ?? "") ? t[i++] : undefined;
  const sel: DeleteSelector = { dst: t[i++] ?? "", metric: 0, ...(type ? { type } : {}) };
  while (i < t.length) {
    const k = t[i];
    if (k === "nexthop") {
      sel.hops = parseHops(t, i);
      break;
    }
    if (k === "via") {
      [i, sel.gateway] = via(t, i + 1);
      continue;
    }
    const v = t[i + 1] ?? "";
    i += 2;
    switch (k) {
      case "dev":
        sel.dev = v;
        break;
      case "src":
        sel.prefsrc = v;
        break;
      case "scope":
        sel.scope = Number(v);
        break;
      case "metric":
        sel.metric = Number(v);
        break;
      case "proto":
        sel.protocol = protocolName(v);
        break;
      case "tos":
        sel.tos = parseTos(v);
        break;
      case "from":
        sel.from = v;
        break;
      case "nhid":
        sel.nhid = Number(v);
        break;
      case "table":
        // One model is one table; a caller with several keeps one model each (plan-tables tests).
        break;
      default:
        if (k === undefined || !ROUTE_ATTRS.has(k))
          throw new SimError(`unknown token ${k} in ${line}`);
        if (v === "lock") {
          // `NAME lock VALUE`: the lock bits are compared as one more metric.
          const locks = (sel.attrs ?? []).find(([n]) => n === "lock")?.[1];
          sel.attrs = [
            ...(sel.attrs ?? []).filter(([n]) => n !== "lock"),
            [k, t[i] ?? ""],
            ["lock", [...(locks ? locks.split(",") : []), k].sort().join(",")],
          ];
          i++;
          break;
        }
        sel.attrs = [...(sel.attrs ?? []), [k, v]];
    }
  }
  return sel;
}
