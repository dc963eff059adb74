/**
 * The policy checker: (policy, request, guest before, phase) -> the first
 * refusal, or none. Pure; the one caller is gate.ts. The order is fixed
 * (phase, reads, packet filter, links, routes, rules, neighbours,
 * sysctls) so a request breaking several rules is always refused by the
 * same one. A refusal names the rule as the policy file spells its field.
 */
import { parseSysctlKey } from "../../net/sysctl/sysctl-keys";
import { checkRoutes, checkRules } from "./check-routes";
import { type CompiledPolicy, isLoopback, refuse } from "./compiled";
import type { LinkAsk, NeighbourAsk, PolicyCurrent, PolicyRequest, Refusal } from "./request";
import type { Kind } from "./schema";

export { type CompiledPolicy, compilePolicy } from "./compiled";

export type Phase = "setup" | "running";

/**
 * What to check: everything; the request alone (before the guest is read:
 * not the phase, not what depends on the guest's state); or, after such a
 * check, what needs the guest and the plan (the phase, the links again,
 * the kernel rules an exact Apply removes) without the request's routes,
 * neighbours and sysctls again (a large Apply's 10,000 routes once).
 */
export type Scope = "all" | "request" | "state";

const listText = (x: Set<string> | "any" | readonly unknown[]) =>
  `[${(x instanceof Set ? [...x] : Array.isArray(x) ? x : []).join(", ")}]`;

/** The kinds of change a request asks for (for the running phase). */
function kindsOf(r: PolicyRequest): Kind[] {
  const kinds: Kind[] = [];
  if (r.links) kinds.push("interfaces");
  if (r.routes) kinds.push("routes");
  if (r.rules) kinds.push("rules");
  if (r.neighbours) kinds.push("neighbours");
  if (r.sysctls) kinds.push("sysctls");
  if (r.packetFilter) kinds.push("packetFilter");
  return kinds;
}

/** The first rule `request` breaks, or undefined when the policy admits it. */
export function checkRequest(
  c: CompiledPolicy,
  request: PolicyRequest,
  current: PolicyCurrent,
  phase: Phase,
  scope: Scope = "all",
): Refusal | undefined {
  const p = c.policy;
  if (request.read) {
    if (p.reads) return undefined;
    return request.readField === undefined
      ? refuse("reads", "(call)", request.method, "reads are not allowed")
      : refuse(
          "reads",
          request.readField,
          "true",
          "answers only what it reads: reads are not allowed",
        );
  }
  const withRequest = scope !== "state";
  const withState = scope !== "request";
  if (withState && phase === "running" && request.changes) {
    const kind = kindsOf(request).find((k) => !p.phases.running.includes(k));
    if (kind !== undefined) {
      return refuse(
        "phases.running",
        "(call)",
        request.method,
        `changes ${kind} after the workload started (running phase allows ${listText(p.phases.running)})`,
      );
    }
  }
  if (withRequest && request.packetFilter && !p.packetFilter) {
    return refuse(
      "packetFilter",
      "(call)",
      request.method,
      "packet filter changes are not allowed",
    );
  }
  if (request.links) {
    // Cheap (at most a few hundred links): checked again with the guest's names and count.
    const bad = checkLinks(c, request.links, current.links, withState);
    if (bad) return bad;
  }
  if (withRequest && request.routes) {
    const bad = checkRoutes(c, request.routes);
    if (bad) return bad;
  }
  if (request.rules) {
    const bad = checkRules(c, request.rules, current.rules ?? [], {
      add: withRequest,
      remove: withState,
    });
    if (bad) return bad;
  }
  if (!withRequest) return undefined;
  if (request.neighbours) {
    for (const n of request.neighbours) {
      const bad = checkNeighbour(c, n);
      if (bad) return bad;
    }
  }
  for (const [i, s] of (request.sysctls?.list ?? []).entries()) {
    const k = parseSysctlKey(s.key);
    const allowed =
      c.sysctls.get(s.key) ?? (typeof k === "string" ? undefined : c.sysctls.get(k.pattern));
    const field = `${request.sysctls?.field}[${i}]`;
    if (allowed === undefined) {
      return refuse("sysctls", `${field}.key`, s.key, "is not a key the policy lists");
    }
    if (allowed !== "any" && !allowed.includes(s.value)) {
      return refuse(
        "sysctls",
        `${field}.value`,
        s.value,
        `is not one of ${listText(allowed)} for ${s.key}`,
      );
    }
  }
  return undefined;
}

function checkLinks(
  c: CompiledPolicy,
  links: readonly LinkAsk[],
  current: PolicyCurrent["links"],
  withCount: boolean,
): Refusal | undefined {
  const p = c.policy.interfaces;
  for (const l of links) {
    const bad = checkLink(c, l, current);
    if (bad) return bad;
  }
  if (!withCount) return undefined;
  // Links with addresses after the call: those asked for with some, and the others as they are.
  const asked = new Set(links.map((l) => l.mac || `name:${l.name}`));
  let count = links.filter((l) => l.addresses.length > 0).length;
  for (const cur of current) {
    if (asked.has(cur.mac) || asked.has(`name:${cur.name}`) || cur.name === "lo") continue;
    if (cur.addresses.some((a) => a.scope === "global")) count++;
  }
  if (count > p.max) {
    const last = links.find((l) => l.addresses.length > 0) ?? links[0];
    return refuse(
      "interfaces.max",
      last?.field ?? "(call)",
      count,
      `links with addresses would be ${count}, more than ${p.max}`,
    );
  }
  return undefined;
}

function checkLink(
  c: CompiledPolicy,
  l: LinkAsk,
  current: PolicyCurrent["links"],
): Refusal | undefined {
  const p = c.policy.interfaces;
  if (l.tuntap) {
    if (!c.policy.tuntap.names.includes(l.name)) {
      return refuse(
        "tuntap.names",
        `${l.field}.name`,
        l.name,
        `is not one of ${listText(c.policy.tuntap.names)}`,
      );
    }
  } else if (c.macs !== "any" && !c.macs.has(l.mac)) {
    return refuse(
      "interfaces.macs",
      `${l.field}.hwAddr`,
      l.mac,
      `is not one of ${listText(c.macs)}`,
    );
  }
  const name = l.name || current.find((x) => x.mac === l.mac && l.mac !== "")?.name || "";
  if (c.names !== "any" && name !== "" && !c.names.has(name)) {
    return refuse(
      "interfaces.names",
      `${l.field}.name`,
      name,
      `is not one of ${listText(c.names)}`,
    );
  }
  if (l.mtu !== 0 && (l.mtu < p.mtu.min || l.mtu > p.mtu.max)) {
    return refuse(
      "interfaces.mtu",
      `${l.field}.mtu`,
      l.mtu,
      `is outside ${p.mtu.min}-${p.mtu.max}`,
    );
  }
  const flags: [boolean, (typeof p.flags)[number], string][] = [
    [l.noarp, "noarp", "raw_flags"],
    [!l.up, "down", "up"],
    [hasAttr(l, "promisc"), "promisc", "attrs"],
    [hasAttr(l, "allmulticast"), "allmulticast", "attrs"],
  ];
  for (const [set, flag, field] of flags) {
    if (set && !p.flags.includes(flag)) {
      return refuse(
        "interfaces.flags",
        `${l.field}.${field}`,
        flag,
        `sets ${flag}, not in ${listText(p.flags)}`,
      );
    }
  }
  const per = c.policy.addresses.perInterface;
  if (l.addresses.length > per) {
    return refuse(
      "addresses.perInterface",
      `${l.field}.${l.addressesField}`,
      l.addresses.length,
      `more than ${per} addresses`,
    );
  }
  for (const [i, a] of l.addresses.entries()) {
    const field = `${l.field}.${l.addressesField}[${i}]`;
    const cidr = `${a.address}/${a.prefix}`;
    if (!c.addresses[a.family].has(a.address, a.prefix)) {
      const rule = a.family === 4 ? "addresses.ipv4" : "addresses.ipv6";
      return refuse(
        rule,
        `${field}.address`,
        cidr,
        `is not admitted by ${c.addresses[a.family].text}`,
      );
    }
  }
  return undefined;
}

const hasAttr = (l: LinkAsk, name: string) =>
  (l.attrs ?? []).some(([n, v]) => n === name && v === "on");

function checkNeighbour(c: CompiledPolicy, n: NeighbourAsk): Refusal | undefined {
  const p = c.policy.neighbours;
  if (c.names !== "any" && !c.names.has(n.dev)) {
    return refuse(
      "interfaces.names",
      `${n.field}.device`,
      n.dev,
      `is not one of ${listText(c.names)}`,
    );
  }
  if (isLoopback(n.ip) || !c.neighbourIps.hasAddress(n.ip)) {
    return refuse(
      "neighbours.ips",
      `${n.field}.address`,
      n.ip,
      `is not inside ${c.neighbourIps.text}`,
    );
  }
  if (n.lladdr !== "" && c.lladdrs !== "any" && !c.lladdrs.has(n.lladdr)) {
    return refuse(
      "neighbours.lladdrs",
      `${n.field}.lladdr`,
      n.lladdr,
      `is not one of ${listText(c.lladdrs)}`,
    );
  }
  const flag = n.flags.find((f) => !(p.flags as readonly string[]).includes(f));
  if (flag !== undefined) {
    return refuse(
      "neighbours.flags",
      `${n.field}.flags`,
      flag,
      `is not one of ${listText(p.flags)}`,
    );
  }
  if (!(p.states as readonly string[]).includes(n.state)) {
    return refuse(
      "neighbours.states",
      `${n.field}.state`,
      n.state,
      `is not one of ${listText(p.states)}`,
    );
  }
  return undefined;
}
