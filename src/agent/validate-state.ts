/**
 * Validation of netagent.v1 Apply requests: wire State in, model values out,
 * before anything is read or changed. Every failure is INVALID_ARGUMENT
 * naming the field and the value (`desired.routes[2].table: 0 ...`).
 *
 * Bounds (a request is held in memory and planned whole): at most
 * {@link LIMITS}.interfaces interfaces, routes, rules, neighbours, sysctls.
 */

import type { ApplyRequest, Route as WireRoute, Rule as WireRule } from "../gen/network_pb";
import {
  defaultDst,
  type Family,
  maxPrefix,
  networkText,
  type ParsedIp,
  parseIp,
  parsePrefix,
} from "../net/address";
import type { DesiredLink, DesiredNeighbor, DesiredState, Sysctl } from "../net/full-state";
import type { Route } from "../net/model";
import type { Rule } from "../net/rules";
import { parseSysctlKey, sysctlValueProblem } from "../net/sysctl-keys";
import { isManagedLink } from "../net/vocabulary/links";
import {
  DEFAULT_PROTOCOL,
  DEFAULT_V6_METRIC,
  isRouteProtocol,
  SCOPE_UNIVERSE,
  TABLE_MAIN,
} from "../net/vocabulary/routes";
import { RULE_ACTION_ATTRS } from "../net/vocabulary/rule-attrs";
import { Code, TtrpcError } from "../ttrpc/codes";
import { ROUTE_TYPE_NAMES, RULE_ACTION_NAMES } from "../wire/state-map";
import { ATTR_LIMITS } from "./validate-attrs";
import { invalid, validateMac, validateName } from "./validate-fields";
import { ruleAttrs } from "./validate-rule-attrs";

export const LIMITS = {
  interfaces: 256,
  routes: 100_000,
  rules: 10_000,
  neighbors: 10_000,
  sysctls: 4_096,
  ...ATTR_LIMITS,
} as const;

function ip(field: string, value: string, family?: Family): ParsedIp {
  const p = parseIp(value);
  if (typeof p === "string") throw invalid(field, value, `is not a valid address: ${p}`);
  if (family !== undefined && p.family !== family)
    throw invalid(field, value, `is IPv${p.family} in an IPv${family} entry`);
  return p;
}

function cidr(field: string, value: string, family: Family): string {
  const [addr = "", len, extra] = value.split("/");
  if (extra !== undefined) throw invalid(field, value, "is not a CIDR");
  // The whole value is quoted, not only its address part.
  const a = parseIp(addr);
  if (typeof a === "string") throw invalid(field, value, `is not a valid CIDR: ${a}`);
  if (a.family !== family)
    throw invalid(field, value, `is IPv${a.family} in an IPv${family} entry`);
  const prefix = len === undefined ? maxPrefix(family) : parsePrefix(len, family);
  if (typeof prefix === "string") throw invalid(field, value, prefix);
  return `${networkText(a.bytes, prefix)}/${prefix}`;
}

function family(field: string, declared: number, probes: string[]): Family {
  if (declared !== 0 && declared !== 4 && declared !== 6)
    throw invalid(field, declared, "is not a family (0 = from the addresses, 4, 6)");
  const first = probes.find(Boolean);
  const seen: Family | undefined = first ? (first.includes(":") ? 6 : 4) : undefined;
  if (seen !== undefined && declared !== 0 && seen !== declared)
    throw invalid(field, declared, `does not match its IPv${seen} addresses`);
  return seen ?? (declared === 6 ? 6 : 4);
}

function mtu(field: string, value: number): number {
  if (value !== 0 && (value < 68 || value > 65535))
    throw invalid(field, value, "is not an MTU (68-65535, or 0)");
  return value;
}

function bounded<T>(field: string, list: readonly T[], max: number): readonly T[] {
  if (list.length > max) throw invalid(field, list.length, `entries: at most ${max} are accepted`);
  return list;
}

function route(f: string, r: WireRoute): Route {
  const type = ROUTE_TYPE_NAMES[r.type];
  if (type === undefined) throw invalid(`${f}.type`, r.type, "is not a route type (0-4)");
  const fam = family(`${f}.family`, r.family, [
    r.dest.split("/")[0] as string,
    r.gateway,
    r.source,
  ]);
  const dst = r.dest === "" ? defaultDst(fam) : cidr(`${f}.dest`, r.dest, fam);
  const gw = r.gateway ? ip(`${f}.gateway`, r.gateway, fam) : undefined;
  const prefsrc = r.source ? ip(`${f}.source`, r.source, fam).text : undefined;
  if (r.device !== "") validateName(`${f}.device`, r.device);
  if (type === "unicast" && r.device === "")
    throw invalid(`${f}.device`, r.device, "is empty: a unicast route needs a link");
  if (!isManagedLink(r.device)) throw invalid(`${f}.device`, r.device, "is not managed (loopback)");
  if (type !== "unicast" && gw)
    throw invalid(`${f}.gateway`, r.gateway, `is given for a ${type} route`);
  if (r.scope > 255) throw invalid(`${f}.scope`, r.scope, "is not a scope (0-255)");
  const protocol = r.protocol === "" ? DEFAULT_PROTOCOL : r.protocol;
  if (!isRouteProtocol(protocol))
    throw invalid(
      `${f}.protocol`,
      r.protocol,
      "is not a route protocol (a name iproute2 knows, or 0-255)",
    );
  return {
    family: fam,
    table: r.table === 0 ? TABLE_MAIN : r.table,
    dst,
    ...(gw?.bytes.some((b) => b !== 0) ? { gateway: gw.text } : {}),
    dev: r.device,
    ...(prefsrc ? { prefsrc } : {}),
    // IPv6 routes have no scope: the kernel keeps universe whatever is asked.
    scope: fam === 4 ? r.scope : SCOPE_UNIVERSE,
    metric: fam === 6 && r.metric === 0 ? DEFAULT_V6_METRIC : r.metric,
    onlink: r.onlink,
    mtu: mtu(`${f}.mtu`, r.mtu),
    protocol,
    type,
  };
}

function rule(f: string, r: WireRule): Rule {
  const action = RULE_ACTION_NAMES[r.action];
  if (action === undefined) throw invalid(`${f}.action`, r.action, "is not a rule action (0-3)");
  const fam = family(`${f}.family`, r.family, [
    r.from.split("/")[0] as string,
    r.to.split("/")[0] as string,
  ]);
  const src = r.from ? cidr(`${f}.from`, r.from, fam) : undefined;
  const dst = r.to ? cidr(`${f}.to`, r.to, fam) : undefined;
  if (r.iif) validateName(`${f}.iif`, r.iif);
  if (r.oif) validateName(`${f}.oif`, r.oif);
  if (r.fwmask !== 0 && r.fwmark === 0 && action === "lookup" && r.fwmask !== 0xffffffff)
    throw invalid(`${f}.fwmask`, r.fwmask, "is given without a fwmark");
  if (action !== "lookup" && r.table !== 0)
    throw invalid(`${f}.table`, r.table, `is given for a ${action} rule`);
  const attrs = ruleAttrs(f, r, action, fam);
  const acts = attrs?.some(([n]) => RULE_ACTION_ATTRS.includes(n)) === true;
  return {
    family: fam,
    priority: r.priority,
    not: r.not,
    ...(src && !src.endsWith("/0") ? { src } : {}),
    ...(dst && !dst.endsWith("/0") ? { dst } : {}),
    ...(r.iif ? { iif: r.iif } : {}),
    ...(r.oif ? { oif: r.oif } : {}),
    ...(r.fwmark || r.fwmask ? { fwmark: { mark: r.fwmark, mask: r.fwmask || 0xffffffff } } : {}),
    action,
    table: action === "lookup" && !acts ? r.table || TABLE_MAIN : 0,
    ...(attrs ? { attrs } : {}),
  };
}

/** Validates an Apply request's desired state into the model. */
export function validateApply(request: ApplyRequest): DesiredState {
  const s = request.desired;
  if (s === undefined) throw new TtrpcError("desired: missing", Code.INVALID_ARGUMENT);
  const links: DesiredLink[] = [];
  const macs = new Set<string>();
  const names = new Set<string>();
  bounded("desired.interfaces", s.interfaces, LIMITS.interfaces).forEach((i, n) => {
    const f = `desired.interfaces[${n}]`;
    const mac = validateMac(`${f}.mac`, i.mac);
    if (macs.has(mac)) throw invalid(`${f}.mac`, i.mac, "is listed twice");
    macs.add(mac);
    if (i.name !== "") {
      validateName(`${f}.name`, i.name);
      if (!isManagedLink(i.name))
        throw invalid(`${f}.name`, i.name, "is reserved for the loopback");
      if (names.has(i.name)) throw invalid(`${f}.name`, i.name, "is given to two interfaces");
      names.add(i.name);
    }
    const seen = new Set<string>();
    const addresses = i.addresses.map((a, k) => {
      const af = `${f}.addresses[${k}]`;
      const p = ip(`${af}.address`, a.address);
      if (a.prefix > maxPrefix(p.family))
        throw invalid(`${af}.prefix`, a.prefix, `is above ${maxPrefix(p.family)}`);
      if (p.bytes.every((b) => b === 0))
        throw invalid(`${af}.address`, a.address, "is the unspecified address");
      if (seen.has(p.text)) throw invalid(`${af}.address`, a.address, "is listed twice");
      seen.add(p.text);
      return { family: p.family, address: p.text, prefix: a.prefix };
    });
    links.push({
      mac,
      name: i.name,
      mtu: mtu(`${f}.mtu`, i.mtu),
      noarp: i.noarp,
      up: i.up,
      addresses,
    });
  });

  const routes: Route[] = [];
  const routeKeys = new Map<string, number>();
  bounded("desired.routes", s.routes, LIMITS.routes).forEach((r, n) => {
    const f = `desired.routes[${n}]`;
    const m = route(f, r);
    const key = `${m.table} ${m.type} ${m.family} ${m.dst} ${m.metric} ${m.dev}`;
    const twin = routeKeys.get(key);
    if (twin !== undefined) {
      const same = JSON.stringify(routes[twin]) === JSON.stringify(m);
      if (same) return;
      throw invalid(
        `${f}.dest`,
        r.dest || m.dst,
        `clashes with desired.routes[${twin}]: same table, destination, metric and device`,
      );
    }
    routeKeys.set(key, routes.length);
    routes.push(m);
  });

  const rules = bounded("desired.rules", s.rules, LIMITS.rules).map((r, n) =>
    rule(`desired.rules[${n}]`, r),
  );

  const neighbors: DesiredNeighbor[] = bounded(
    "desired.neighbors",
    s.neighbors,
    LIMITS.neighbors,
  ).map((x, n) => {
    const f = `desired.neighbors[${n}]`;
    const p = ip(`${f}.address`, x.address);
    validateName(`${f}.device`, x.device);
    if (!isManagedLink(x.device))
      throw invalid(`${f}.device`, x.device, "is not managed (loopback)");
    return {
      family: p.family,
      ip: p.text,
      dev: x.device,
      lladdr: validateMac(`${f}.lladdr`, x.lladdr),
      router: x.router,
    };
  });

  const sysctls: Sysctl[] = [];
  const keys = new Set<string>();
  bounded("desired.sysctls", s.sysctls, LIMITS.sysctls).forEach((x, n) => {
    const f = `desired.sysctls[${n}]`;
    const k = parseSysctlKey(x.key);
    if (typeof k === "string") throw invalid(`${f}.key`, x.key, k);
    // Two spellings of one link's key (its dots as "." or "/") are one key.
    if (keys.has(k.key)) throw invalid(`${f}.key`, x.key, "is listed twice");
    keys.add(k.key);
    const problem = sysctlValueProblem(x.value);
    if (problem) throw invalid(`${f}.value`, x.value, problem);
    sysctls.push({ key: k.key, value: x.value });
  });
  return { links, routes, rules, neighbors, sysctls };
}
