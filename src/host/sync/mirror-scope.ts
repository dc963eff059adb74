/**
 * What of a pod's state one netagent.v1 Apply can carry, and what it
 * cannot, each with why: an element the guest cannot have never sinks the
 * whole sync. Pure.
 *
 * Left out here, before anything is sent:
 * - a link without an Ethernet MAC that is not a tun device (a tunnel's
 *   base device): the guest finds its NICs by MAC, a VM's NIC always has
 *   one, so the guest has no twin of it; with it go the routes through it, its
 *   permanent neighbours, its sysctls and nexthop objects, and the routes
 *   by those (its addresses are the link's).
 *   Rules naming it in iif/oif stay: the kernel keeps such a rule, detached;
 * - what the model does not carry: a rule with a selector it has no field
 *   for (sending it without would widen what it matches), a route of a type
 *   netagent.v1 does not carry.
 * - two links of one MAC, both, naming it: the guest finds NICs by MAC;
 * - a link with a MAC the guest has no NIC of, that no runtime makes a NIC
 *   of (no addresses, or a kind such as a bridge): none will appear.
 * A tap with a MAC is sent as the NIC it becomes in the VM (found by MAC,
 * never made: docs/endpoints.md); a tun device is carried (the agent makes
 * it, found by name); one the pod has without `persist` (a process holds
 * it) is listed: the guest's is persistent, as `ip tuntap add` makes it.
 * What the guest's kernel refuses is left out by the agent (best_effort)
 * and listed from its answer ({@link describeField}): a tun device where
 * the guest has no /dev/net/tun, with what goes through it.
 */
import type { State } from "../../gen/network_pb";
import { type Link, type Route, routeDevs } from "../../net/model/model";
import { withoutNexthops } from "../../net/plan/plan-nexthops";
import { parseSysctlKey } from "../../net/sysctl/sysctl-keys";
import { isManagedLink } from "../../net/vocabulary/links";
import { formatTable, TABLE_LOCAL, TABLE_MAIN } from "../../net/vocabulary/routes";
import { isStateRoute } from "../../wire/state-map";
import type { PodFullState } from "../pod/pod-state";
import {
  addressWords,
  linkWords,
  neighborWords,
  routeWords,
  ruleWords,
  stateRouteView,
  stateRuleView,
} from "../print/words";

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** Whether the guest can have a twin of this link: it has an Ethernet MAC. */
function hasMac(mac: string): boolean {
  return MAC.test(mac) && mac !== "00:00:00:00:00:00";
}

export interface MirrorScope {
  /** The pod without what cannot be carried. */
  pod: PodFullState;
  /** One line per element left out: what it is, then why. */
  leftOut: string[];
}

const routeText = (r: Route) => {
  const words = routeWords(r);
  const table = r.table ?? TABLE_MAIN;
  return table === TABLE_MAIN ? words : `${words} table ${formatTable(table)}`;
};

/** The kernel's own routes of table local and routes on lo: not part of any state, not listed. */
function kernelOwned(r: Route): boolean {
  if ((r.table ?? TABLE_MAIN) === TABLE_LOCAL && r.protocol === "kernel") return true;
  return r.type === "unicast" && !isManagedLink(r.dev);
}

/**
 * The pod's links as one Apply sends them: a tap with a MAC (`ip tuntap`
 * mode tap) without its tun/tap settings, so the guest finds it by MAC
 * like any NIC. A runtime attaches a pod's tap to the VM as it does a
 * veth: the guest's NIC with that MAC is the tap, and making another
 * device of that name would leave the guest two links of one MAC.
 */
export function asEndpoints(links: readonly Link[]): Link[] {
  return links.map((l) => {
    if (l.tuntap?.mode !== "tap" || !hasMac(l.mac)) return l;
    const { tuntap: _, ...nic } = l;
    return nic;
  });
}

/**
 * The links whose MAC another link of the pod has too (lo aside), by
 * name: the MAC and the others' names. The guest finds its NICs by MAC,
 * so neither can be told apart there.
 */
export function sharedMacs(links: readonly Link[]): Map<string, { mac: string; with: string }> {
  const byMac = new Map<string, Link[]>();
  for (const l of links) {
    if (!isManagedLink(l.name) || l.flags.includes("LOOPBACK") || !hasMac(l.mac)) continue;
    byMac.set(l.mac, [...(byMac.get(l.mac) ?? []), l]);
  }
  const out = new Map<string, { mac: string; with: string }>();
  for (const [mac, same] of byMac) {
    if (same.length < 2) continue;
    for (const l of same) {
      const others = same.filter((o) => o !== l).map((o) => o.name);
      out.set(l.name, { mac, with: others.join(", ") });
    }
  }
  return out;
}

/**
 * Link kinds a runtime attaches to the VM as a NIC with the link's MAC (a
 * physical device has no kind; a tap is kind tun): docs/endpoints.md.
 */
const NIC_KINDS = new Set(["veth", "macvlan", "macvtap", "ipvlan", "tun", ""]);

/**
 * Why no runtime makes a NIC of this link, or undefined when one does: it
 * has no address (a runtime skips an unconfigured link), or it is of a
 * kind no runtime attaches.
 */
function noNicWhy(l: Link): string | undefined {
  if (l.addresses.length === 0)
    return "no addresses (a runtime makes no NIC of an unconfigured link)";
  if (!NIC_KINDS.has(l.kind)) return `a ${l.kind} device (a runtime makes no NIC of it)`;
  return undefined;
}

/**
 * `guestMacs`, when given, are the MACs of the guest's links: a pod link
 * with a MAC the guest lacks that no runtime makes a NIC of is left out
 * (one a runtime does make is sent: Apply waits for it, as for hot-plug).
 */
export function scopeMirror(pod: PodFullState, guestMacs?: ReadonlySet<string>): MirrorScope {
  const leftOut: string[] = [];
  const gone = new Set<string>();
  const shared = sharedMacs(pod.links);
  const links = asEndpoints(pod.links).filter((l) => {
    const twin = shared.get(l.name);
    if (twin !== undefined) {
      gone.add(l.name);
      leftOut.push(
        `interface ${l.name}: shares MAC ${twin.mac} with ${twin.with}: the guest finds its NICs by MAC and cannot tell them apart`,
      );
      return false;
    }
    const noNic = hasMac(l.mac) && guestMacs && !guestMacs.has(l.mac) ? noNicWhy(l) : undefined;
    if (noNic !== undefined && isManagedLink(l.name) && !l.flags.includes("LOOPBACK")) {
      gone.add(l.name);
      leftOut.push(`interface ${l.name}: ${noNic} and the guest has no NIC with its MAC ${l.mac}`);
      return false;
    }
    if (l.tuntap && !l.tuntap.persist && isManagedLink(l.name))
      leftOut.push(
        `interface ${l.name}: not persistent in the pod (a process holds it); the guest's is persistent`,
      );
    if (!isManagedLink(l.name) || l.flags.includes("LOOPBACK") || hasMac(l.mac) || l.tuntap)
      return true;
    gone.add(l.name);
    const kind = l.kind ? ` (a ${l.kind} device)` : "";
    leftOut.push(
      `interface ${l.name}: no MAC address${kind}: the guest finds its NICs by MAC and has no twin of it`,
    );
    return false;
  });
  for (const l of links) {
    for (const a of l.addresses) {
      // carried without what the model has no row for (the guest's kernel decides it)
      if (a.other?.length)
        leftOut.push(
          `address ${a.address}/${a.prefix} on ${l.name}: not carried: ${a.other.join(" ")}`,
        );
    }
  }
  const because = (dev: string) => `its device ${dev} is not mirrored`;
  // Nexthop objects through such a link go, groups left without members too.
  const nexthopsGone = new Set<number>();
  for (const n of pod.nexthops ?? []) {
    if (!n.dev || !gone.has(n.dev)) continue;
    nexthopsGone.add(n.id);
    leftOut.push(`nexthop id ${n.id} dev ${n.dev}: ${because(n.dev)}`);
  }
  const nexthops = nexthopsGone.size
    ? withoutNexthops(pod.nexthops ?? [], nexthopsGone)
    : pod.nexthops;
  const kept = new Set((nexthops ?? []).map((n) => n.id));
  for (const n of pod.nexthops ?? []) {
    if (!kept.has(n.id) && !nexthopsGone.has(n.id))
      leftOut.push(`nexthop id ${n.id}: every member's device is not mirrored`);
  }
  const routes = pod.routes.filter((r) => {
    const dev = routeDevs(r).find((d) => gone.has(d));
    if (dev !== undefined) {
      if (!kernelOwned(r)) leftOut.push(`route ${routeText(r)}: ${because(dev)}`);
      return false;
    }
    if (r.nhid !== undefined && !kept.has(r.nhid)) {
      leftOut.push(`route ${routeText(r)}: its nexthop object ${r.nhid} is not mirrored`);
      return false;
    }
    if (!isStateRoute(r) && !kernelOwned(r)) {
      leftOut.push(`route ${routeText(r)}: netagent.v1 does not carry routes of type ${r.type}`);
    }
    return true;
  });
  const rules = pod.rules.filter((r) => {
    if (!r.other?.length) return true;
    leftOut.push(`rule ${r.priority} (v${r.family}): not carried: ${r.other.join(" ")}`);
    return false;
  });
  const neighbors = pod.neighbors.filter((n) => {
    if (!gone.has(n.dev)) return true;
    if (n.state.includes("PERMANENT") && n.lladdr) {
      leftOut.push(`neighbour ${neighborWords(n)}: ${because(n.dev)}`);
    }
    return false;
  });
  const ifaceOf = (key: string) => {
    const k = parseSysctlKey(key);
    return typeof k === "string" ? undefined : k.iface;
  };
  const sysctls = pod.sysctls.filter((s) => {
    const iface = ifaceOf(s.key);
    if (iface === undefined || !gone.has(iface)) return true;
    leftOut.push(`sysctl ${s.key} = ${s.value}: ${because(iface)}`);
    return false;
  });
  return {
    pod: { ...pod, links, routes, rules, neighbors, sysctls, ...(nexthops ? { nexthops } : {}) },
    leftOut,
  };
}

/**
 * The element a field of a request's State names, in words, for the
 * agent's list of what it left out: `desired.routes[3]` is that route.
 */
export function describeField(state: State | undefined, field: string): string {
  const m = /^desired\.(\w+)\[(\d+)\](?:\.(\w+)(?:\[(\d+)\])?)?$/.exec(field);
  if (!state || !m) return field;
  const [, kind, i, sub, k] = m;
  const n = Number(i);
  if (kind === "routes" && state.routes[n]) {
    const r = state.routes[n];
    const words = routeWords(stateRouteView(r));
    return `route ${words}${r.table === TABLE_MAIN ? "" : ` table ${formatTable(r.table)}`}`;
  }
  if (kind === "rules" && state.rules[n]) return `rule ${ruleWords(stateRuleView(state.rules[n]))}`;
  if (kind === "neighbors" && state.neighbors[n]) {
    const x = state.neighbors[n];
    return `neighbour ${neighborWords({ ip: x.address, dev: x.device, lladdr: x.lladdr, router: x.router })}`;
  }
  if (kind === "sysctls" && state.sysctls[n]) {
    return `sysctl ${state.sysctls[n].key} = ${state.sysctls[n].value}`;
  }
  const link = kind === "interfaces" ? state.interfaces[n] : undefined;
  if (!link) return field;
  const name = link.name || link.mac;
  if (sub === "mtu") return `interface ${name}: mtu ${link.mtu}`;
  const a = sub === "addresses" ? link.addresses[Number(k)] : undefined;
  if (a) return `address ${addressWords(a.address, a.prefix)} on ${name}`;
  return `interface ${linkWords(link)}`;
}
