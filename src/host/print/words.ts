/**
 * The words netagentctl prints for a route, rule, neighbour, link and
 * address: one spelling for each, whichever message carried it (the Kata
 * requests and lists, netagent.v1's State, a plan's batch lines), in diff,
 * plan, the tables and the watch lines alike. Pure; the caller escapes what
 * came from the guest when it prints.
 *
 * - The default destination is `default`; a line of an IPv6 route says
 *   `default (v6)` (a table has a FAMILY column instead), as a line of an
 *   IPv6 rule says `(v6)`: IPv4 is the unmarked family.
 * - Scopes by iproute2's name (`link`, `host`, `site`, `nowhere`, else the
 *   number); attributes at their defaults (scope global, metric 0, type
 *   unicast, protocol boot, MTU 0) say nothing.
 * - Attributes in one order: `[type] dst [tos] [from] [nhid] via dev src
 *   scope metric onlink mtu proto`, the other attributes as `ip` writes
 *   them (a countdown such as `expires` by its name alone: it differs by
 *   the second), the paths of a multipath route, then any word this module
 *   does not know, as it came.
 */
import type {
  Nexthop as StateNexthop,
  Route as StateRoute,
  Rule as StateRule,
} from "../../gen/network_pb";
import { IPFamily, type Route as KataRoute } from "../../gen/types_pb";
import { defaultDst, type Family } from "../../net/model/address";
import type { Route } from "../../net/model/model";
import { type Rule, selectorWords } from "../../net/plan/rules";
import { attrWords } from "../../net/vocabulary/attrs";
import { ROUTE_ATTRS } from "../../net/vocabulary/route-attrs";
import {
  DEFAULT_PROTOCOL,
  DEFAULT_ROUTE_TYPE,
  formatTable,
  formatTos,
  RTNH_F_ONLINK,
  SCOPE_UNIVERSE,
  scopeName,
  TABLE_MAIN,
} from "../../net/vocabulary/routes";
import { RULE_ACTION_ATTRS, RULE_ATTRS } from "../../net/vocabulary/rule-attrs";
import { ROUTE_TYPE_NAMES, RULE_ACTION_NAMES } from "../../wire/state-map";

/** A route as far as a message tells it: the model's fields, most of them optional. */
export type RouteView = Pick<Route, "family" | "dst"> &
  Partial<Omit<Route, "family" | "dst" | "table">> & {
    /** Words of a plan line this module does not know, printed last as they came. */
    extra?: readonly string[];
  };

/** `default` for the family's default (or ""), else the destination as given. */
export function destinationWord(dst: string, family: Family): string {
  return dst === "" || dst === defaultDst(family) ? "default" : dst;
}

/** A scope's word: "" for universe (global), else iproute2's name or the number. */
export function scopeWord(scope: number): string {
  return scope === SCOPE_UNIVERSE ? "" : scopeName(scope);
}

/** A route in one line (see the module comment for the rules). */
export function routeWords(r: RouteView): string {
  const t: string[] = [];
  if (r.type && r.type !== DEFAULT_ROUTE_TYPE) t.push(r.type);
  const dst = destinationWord(r.dst, r.family);
  t.push(dst === "default" && r.family === 6 ? "default (v6)" : dst);
  if (r.tos) t.push("tos", formatTos(r.tos));
  if (r.from) t.push("from", r.from);
  if (r.nhid) t.push("nhid", String(r.nhid));
  if (r.gateway)
    t.push("via", r.family === 4 && r.gateway.includes(":") ? `inet6 ${r.gateway}` : r.gateway);
  if (r.dev) t.push("dev", r.dev);
  if (r.prefsrc) t.push("src", r.prefsrc);
  if (r.scope) t.push("scope", scopeWord(r.scope));
  if (r.metric) t.push("metric", String(r.metric));
  if (r.onlink) t.push("onlink");
  if (r.mtu) t.push("mtu", String(r.mtu));
  if (r.protocol && r.protocol !== DEFAULT_PROTOCOL) t.push("proto", r.protocol);
  for (const [name, value] of r.attrs ?? []) {
    const spec = ROUTE_ATTRS.get(name);
    if (spec?.volatile) t.push(name);
    else if (name === "lock") t.push("lock", value);
    else t.push(...(spec ? spec.words(value, []) : [name, value]));
  }
  for (const h of r.hops ?? []) {
    t.push("nexthop");
    if (h.gateway) t.push("via", h.gateway);
    t.push("dev", h.dev, "weight", String(h.weight));
    if (h.onlink) t.push("onlink");
  }
  if (r.extra) t.push(...r.extra);
  return t.join(" ");
}

/** A nexthop object: `id N via G dev D [onlink] | blackhole | group A[,W]/B`, its protocol and attributes. */
export function nexthopWords(n: StateNexthop): string {
  const t = [`id ${n.id}`];
  if (n.family === 6 && !n.gateway && n.group.length === 0) t.push("(v6)");
  if (n.group.length) {
    t.push(
      "group",
      n.group.map((m) => (m.weight > 1 ? `${m.id},${m.weight}` : `${m.id}`)).join("/"),
    );
  }
  if (n.blackhole) t.push("blackhole");
  if (n.gateway) t.push("via", n.gateway);
  if (n.device) t.push("dev", n.device);
  if (n.onlink) t.push("onlink");
  for (const a of n.attrs) t.push(a.name, a.value);
  if (n.protocol) t.push("proto", n.protocol);
  return t.join(" ");
}

/** A Kata route's family: from its addresses when they tell, else its `family` field. */
export function kataRouteFamily(r: KataRoute): Family {
  const probe = [r.dest.split("/")[0], r.gateway, r.source.split("/")[0]].find(Boolean);
  if (probe) return probe.includes(":") ? 6 : 4;
  return r.family === IPFamily.v6 ? 6 : 4;
}

/** A Kata route (a request or a ListRoutes entry) as a view: no metric, type or protocol. */
export function kataRouteView(r: KataRoute): RouteView {
  return {
    family: kataRouteFamily(r),
    dst: r.dest,
    gateway: r.gateway,
    dev: r.device,
    prefsrc: r.source,
    scope: r.scope,
    onlink: (r.flags & RTNH_F_ONLINK) !== 0,
    mtu: r.mtu,
  };
}

/** A netagent.v1 route as a view (its table is the caller's heading). */
export function stateRouteView(r: StateRoute): RouteView {
  return {
    family: r.family === 6 ? 6 : 4,
    type: ROUTE_TYPE_NAMES[r.type] ?? String(r.type),
    dst: r.dest,
    gateway: r.gateway,
    dev: r.device,
    prefsrc: r.source,
    scope: r.scope,
    metric: r.metric,
    onlink: r.onlink,
    mtu: r.mtu,
    protocol: r.protocol,
    ...(r.tos ? { tos: r.tos } : {}),
    ...(r.from ? { from: r.from } : {}),
    ...(r.nhid ? { nhid: r.nhid } : {}),
    ...(r.hops.length
      ? {
          hops: r.hops.map((h) => ({
            ...(h.gateway ? { gateway: h.gateway } : {}),
            dev: h.device,
            weight: h.weight || 1,
            onlink: h.onlink,
          })),
        }
      : {}),
    ...(r.attrs.length ? { attrs: r.attrs.map((a) => [a.name, a.value] as const) } : {}),
  };
}

/** A rule as far as a message tells it; `action` may be a number a newer peer sent. */
export type RuleView = Omit<Rule, "action" | "other"> & {
  action: string;
  /** Words of a plan line this module does not know, printed last as they came. */
  extra?: readonly string[];
};

/**
 * `PRIORITY: [(v6)] [not] from SRC|all [to DST] [iif I] [oif O] [fwmark M/K] [ATTRIBUTES]
 * lookup TABLE|ACTION` (an attribute may be the action: goto, nop, l3mdev).
 */
export function ruleWords(r: RuleView): string {
  const t: string[] = [`${r.priority}:`];
  if (r.family === 6) t.push("(v6)");
  if (r.not) t.push("not");
  t.push("from", r.src || "all");
  t.push(...selectorWords(r));
  t.push(...attrWords(RULE_ATTRS, r.attrs));
  if (r.attrs?.some(([n]) => RULE_ACTION_ATTRS.includes(n))) {
    // goto, nop or l3mdev is the action
  } else if (r.action === "lookup") t.push("lookup", formatTable(r.table || TABLE_MAIN));
  else if (r.action) t.push(r.action);
  if (r.extra) t.push(...r.extra);
  return t.join(" ");
}

/** A netagent.v1 rule as a view. */
export function stateRuleView(r: StateRule): RuleView {
  return {
    family: r.family === 6 ? 6 : 4,
    priority: r.priority,
    not: r.not,
    src: r.from,
    dst: r.to,
    iif: r.iif,
    oif: r.oif,
    ...(r.fwmark || r.fwmask ? { fwmark: { mark: r.fwmark, mask: r.fwmask } } : {}),
    action: RULE_ACTION_NAMES[r.action] ?? String(r.action),
    table: r.table,
    ...(r.attrs.length ? { attrs: r.attrs.map((a) => [a.name, a.value] as const) } : {}),
  };
}

/** `[proxy] ADDRESS dev DEVICE [lladdr MAC] [router] [extern_learn]`, as `ip neigh` orders them. */
export function neighborWords(n: {
  ip: string;
  dev: string;
  lladdr?: string;
  router?: boolean;
  attrs?: readonly (readonly [string, string])[];
}): string {
  const on = (k: string) => n.attrs?.some(([name]) => name === k) === true;
  const t = on("proxy") ? ["proxy", n.ip, "dev", n.dev] : [n.ip, "dev", n.dev];
  if (n.lladdr) t.push("lladdr", n.lladdr);
  if (n.router) t.push("router");
  if (on("extern_learn")) t.push("extern_learn");
  return t.join(" ");
}

/** `NAME MAC [mtu N] [noarp] [up|down]`: what the message says of a link (MTU 0 = not given). */
export function linkWords(l: {
  name: string;
  mac: string;
  mtu?: number | bigint;
  noarp?: boolean;
  up?: boolean;
}): string {
  const t = [l.name, l.mac];
  if (l.mtu) t.push("mtu", String(l.mtu));
  if (l.noarp) t.push("noarp");
  if (l.up !== undefined) t.push(l.up ? "up" : "down");
  return t.join(" ");
}

/** `ADDRESS/PREFIX`. */
export function addressWords(address: string, prefix: number | string): string {
  return `${address}/${prefix}`;
}
