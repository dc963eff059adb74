/**
 * Validation of netagent.v1 Apply requests: wire State in, model values out,
 * before anything is read or changed. Every failure is INVALID_ARGUMENT
 * naming the field and the value (`desired.routes[2].table: 0 ...`).
 *
 * Bounds (a request is held in memory and planned whole): at most
 * {@link LIMITS}.interfaces interfaces (of them {@link LIMITS}.tuntaps tun
 * or tap devices), routes, rules, neighbours, sysctls, nexthop objects (and
 * per route or object: paths, members, attributes).
 * Routes and nexthop objects: validate-state-routes.ts.
 */

import type { ApplyRequest, Rule as WireRule } from "../../gen/network_pb";
import { maxPrefix } from "../../net/model/address";
import type {
  DesiredLink,
  DesiredNeighbor,
  DesiredState,
  Sysctl,
} from "../../net/model/full-state";
import type { Rule } from "../../net/plan/rules";
import { parseSysctlKey, sysctlValueProblem } from "../../net/sysctl/sysctl-keys";
import { isManagedLink } from "../../net/vocabulary/links";
import { isProxy, NEIGHBOR_ATTRS } from "../../net/vocabulary/neighbor-attrs";
import { TABLE_MAIN } from "../../net/vocabulary/routes";
import { RULE_ACTION_ATTRS } from "../../net/vocabulary/rule-attrs";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { RULE_ACTION_NAMES } from "../../wire/state-map";
import { ATTR_LIMITS, attrsFromWire } from "./validate-attrs";
import {
  bounded,
  cidr,
  invalid,
  mtuForIpv6,
  mtuOrZero,
  stateFamily,
  validateMac,
  validateName,
  validIp,
} from "./validate-fields";
import { desiredAddress, linkAttrs } from "./validate-link-attrs";
import { ruleAttrs } from "./validate-rule-attrs";
import { ROUTE_LIMITS, routesFromWire } from "./validate-state-routes";
import { boundTuntaps, desiredTuntap, TUNTAP_LIMIT } from "./validate-tuntap";

export const LIMITS = {
  interfaces: 256,
  routes: 100_000,
  rules: 10_000,
  neighbors: 10_000,
  sysctls: 4_096,
  tuntaps: TUNTAP_LIMIT,
  ...ATTR_LIMITS,
  ...ROUTE_LIMITS,
} as const;

function rule(f: string, r: WireRule): Rule {
  const action = RULE_ACTION_NAMES[r.action];
  if (action === undefined) throw invalid(`${f}.action`, r.action, "is not a rule action (0-3)");
  const fam = stateFamily(`${f}.family`, r.family, [
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
  boundTuntaps(bounded("desired.interfaces", s.interfaces, LIMITS.interfaces));
  s.interfaces.forEach((i, n) => {
    const f = `desired.interfaces[${n}]`;
    const { mac, tuntap } = desiredTuntap(f, i);
    if (mac !== "" && macs.has(mac)) throw invalid(`${f}.mac`, i.mac, "is listed twice");
    if (mac !== "") macs.add(mac);
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
      const p = validIp(`${af}.address`, a.address);
      if (a.prefix > maxPrefix(p.family))
        throw invalid(`${af}.prefix`, a.prefix, `is above ${maxPrefix(p.family)}`);
      if (p.bytes.every((b) => b === 0))
        throw invalid(`${af}.address`, a.address, "is the unspecified address");
      if (seen.has(p.text)) throw invalid(`${af}.address`, a.address, "is listed twice");
      seen.add(p.text);
      return desiredAddress(af, a, p);
    });
    const attrs = linkAttrs(f, i);
    const v6 = addresses.findIndex((a) => a.family === 6);
    const ipv6 = i.addresses[v6];
    mtuForIpv6(
      `${f}.mtu`,
      mtuOrZero(`${f}.mtu`, i.mtu),
      ipv6 && {
        field: `${f}.addresses[${v6}].address`,
        address: ipv6.address,
      },
    );
    links.push({
      mac,
      name: i.name,
      mtu: i.mtu,
      noarp: i.noarp,
      up: i.up,
      addresses,
      ...(attrs ? { attrs } : {}),
      ...(tuntap ? { tuntap } : {}),
    });
  });

  const { routes, nexthops } = routesFromWire(s.routes, s.nexthops, LIMITS.routes);

  const rules = bounded("desired.rules", s.rules, LIMITS.rules).map((r, n) =>
    rule(`desired.rules[${n}]`, r),
  );

  const neighbors: DesiredNeighbor[] = bounded(
    "desired.neighbors",
    s.neighbors,
    LIMITS.neighbors,
  ).map((x, n) => {
    const f = `desired.neighbors[${n}]`;
    const p = validIp(`${f}.address`, x.address);
    validateName(`${f}.device`, x.device);
    if (!isManagedLink(x.device))
      throw invalid(`${f}.device`, x.device, "is not managed (loopback)");
    const attrs = attrsFromWire(f, x.attrs, NEIGHBOR_ATTRS);
    const proxy = isProxy({ ...(attrs ? { attrs } : {}) });
    if (proxy && x.lladdr !== "")
      throw invalid(`${f}.lladdr`, x.lladdr, "is given for a proxy entry (it has none)");
    return {
      family: p.family,
      ip: p.text,
      dev: x.device,
      lladdr: proxy ? "" : validateMac(`${f}.lladdr`, x.lladdr),
      router: x.router,
      ...(attrs ? { attrs } : {}),
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
  return { links, routes, rules, neighbors, sysctls, nexthops };
}
