/**
 * The policy's routes and rules: each route's table, type, scope,
 * destination, gateways (of the route, its paths and the nexthop object it
 * names), preferred source and device (never `lo`); rules allowed or not,
 * their tables, and what an exact Apply would remove of the kernel's
 * default rules. Pure; called from check.ts.
 */
import type { Nexthop, Route } from "../../net/model/model";
import { DEFAULT_RULES, type Rule } from "../../net/plan/rules";
import { type CompiledPolicy, isLoopback, refuse } from "./compiled";
import type { PolicyRequest, Refusal } from "./request";
import type { SCOPES } from "./schema";

const SCOPE_OF: Record<number, (typeof SCOPES)[number]> = {
  0: "universe",
  200: "site",
  253: "link",
  254: "host",
  255: "nowhere",
};

const MAIN = 254;

/** The first route of `routes` the policy refuses. */
export function checkRoutes(
  c: CompiledPolicy,
  routes: NonNullable<PolicyRequest["routes"]>,
): Refusal | undefined {
  const p = c.policy.routes;
  const tables = new Set(p.tables);
  const types = new Set<string>(p.types);
  const scopes = new Set<string>(p.scopes);
  const objects = new Map<number, Nexthop>((routes.nexthops ?? []).map((n) => [n.id, n]));
  const list = routes.list;
  // No allocation per route on the way through: the field's name is built only for a refusal.
  for (let i = 0; i < list.length; i++) {
    const r = list[i] as Route;
    const f = () => `${routes.field}[${i}]`;
    const table = r.table ?? MAIN;
    if (!tables.has(table)) {
      return refuse(
        "routes.tables",
        `${f()}.table`,
        table,
        `is not one of [${p.tables.join(", ")}]`,
      );
    }
    if (!types.has(r.type)) {
      return refuse("routes.types", `${f()}.type`, r.type, `is not one of [${p.types.join(", ")}]`);
    }
    const scope = SCOPE_OF[r.scope] ?? String(r.scope);
    if (!scopes.has(scope)) {
      return refuse(
        "routes.scopes",
        `${f()}.scope`,
        scope,
        `is not one of [${p.scopes.join(", ")}]`,
      );
    }
    if (!c.destinations.has(r.dst)) {
      return refuse(
        "routes.destinations",
        `${f()}.dest`,
        r.dst,
        `is not admitted by ${c.destinations.text}`,
      );
    }
    const own = checkPath(c, r.dev, r.gateway);
    if (own) return own(f());
    if (r.hops !== undefined) {
      for (let k = 0; k < r.hops.length; k++) {
        const h = r.hops[k] as NonNullable<Route["hops"]>[number];
        const bad = checkPath(c, h.dev, h.gateway);
        if (bad) return bad(`${f()}.hops[${k}]`);
      }
    }
    const object = r.nhid === undefined ? undefined : objects.get(r.nhid);
    if (object) {
      const bad = checkPath(c, object.dev, object.gateway);
      if (bad) return bad(`${f()}.nhid`);
    }
    if (
      r.prefsrc !== undefined &&
      (isLoopback(r.prefsrc) || !c.addresses[r.family].hasAddress(r.prefsrc))
    ) {
      return refuse(
        "routes.sources",
        `${f()}.source`,
        r.prefsrc,
        `is not an address the policy admits (${c.addresses[r.family].text})`,
      );
    }
  }
  for (const [i, n] of (routes.nexthops ?? []).entries()) {
    const bad = checkPath(c, n.dev, n.gateway);
    if (bad) return bad(`desired.nexthops[${i}]`);
  }
  return undefined;
}

/** One path (device and gateway): undefined when admitted, else the refusal for its field. */
function checkPath(
  c: CompiledPolicy,
  dev: string,
  gateway: string | undefined,
): ((field: string) => Refusal) | undefined {
  if (dev === "lo") {
    return (f) => refuse("routes.lo", `${f}.device`, dev, "no route goes through lo");
  }
  if (c.names !== "any" && dev !== "" && !c.names.has(dev)) {
    return (f) => refuse("interfaces.names", `${f}.device`, dev, "is not a link the policy names");
  }
  if (gateway !== undefined && gateway !== "" && !c.gateways.hasAddress(gateway)) {
    return (f) =>
      refuse("routes.gateways", `${f}.gateway`, gateway, `is not inside ${c.gateways.text}`);
  }
  return undefined;
}

/** A rule the kernel makes in every namespace (whatever its protocol attribute). */
export function isDefaultRule(r: Rule): boolean {
  return DEFAULT_RULES.some(
    (d) =>
      d.family === r.family &&
      d.priority === r.priority &&
      !r.not &&
      r.action === "lookup" &&
      r.table === d.table &&
      r.src === undefined &&
      r.dst === undefined &&
      r.iif === undefined &&
      r.oif === undefined &&
      r.fwmark === undefined &&
      (r.attrs ?? []).every(([n]) => n === "protocol") &&
      (r.other ?? []).length === 0,
  );
}

/** Rules other than the kernel's need `rules.allowed` and a listed table; an exact set may not drop the kernel's. */
export function checkRules(
  c: CompiledPolicy,
  rules: NonNullable<PolicyRequest["rules"]>,
  current: readonly Rule[],
  parts: { add: boolean; remove: boolean } = { add: true, remove: true },
): Refusal | undefined {
  const p = c.policy.rules;
  for (const [i, r] of (parts.add ? rules.list : []).entries()) {
    if (isDefaultRule(r)) continue;
    const f = `${rules.field}[${i}]`;
    if (!p.allowed)
      return refuse("rules.allowed", f, `priority ${r.priority}`, "policy rules are not allowed");
    if (r.action === "lookup" && !p.tables.includes(r.table)) {
      return refuse(
        "rules.tables",
        `${f}.table`,
        r.table,
        `is not one of [${p.tables.join(", ")}]`,
      );
    }
    if (r.action === "lookup" && r.table === 0) {
      return refuse(
        "rules.tables",
        `${f}.attrs`,
        "goto/nop/l3mdev",
        "only lookups of listed tables are allowed",
      );
    }
  }
  if (parts.remove && rules.exact) {
    const kept = rules.list
      .filter(isDefaultRule)
      .map((r) => `${r.family} ${r.priority} ${r.table}`);
    const gone = current.find(
      (r) => isDefaultRule(r) && !kept.includes(`${r.family} ${r.priority} ${r.table}`),
    );
    if (gone && !p.allowed) {
      return refuse(
        "rules.allowed",
        rules.field,
        `IPv${gone.family} ${gone.priority}: lookup ${gone.table}`,
        "an exact Apply without it would remove the kernel's default rule",
      );
    }
  }
  return undefined;
}
