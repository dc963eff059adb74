/**
 * Restore planning for a failed Apply: the lines that put a namespace back
 * exactly as it was read before. Pure; two steps, because what the kernel
 * does to routes when links change can only be known by reading:
 * 1. planLinksRestore: names (through temporary names, so any permutation
 *    of renames unwinds), MTU, ARP, the exact address set, up state;
 * 2. planStateRestore, against a fresh read: nexthop objects and routes of
 *    every table exactly (table local's kernel routes aside, which follow
 *    the addresses), the exact rule set, permanent neighbours.
 * Sysctl writes are undone by the caller from each write's previous value.
 */

import type { FullState } from "../model/full-state";
import type { Link, Route } from "../model/model";
import { isManagedLink } from "../vocabulary/links";
import { isProxy } from "../vocabulary/neighbor-attrs";
import { TABLE_LOCAL } from "../vocabulary/routes";
import { planLink, swapName } from "./plan-link";
import {
  neighborKey,
  neighborRest,
  renderNeighborDelete,
  renderPermanentNeighbor,
  type StateNeighbor,
} from "./plan-neighbors";
import { planNexthops, withoutNexthops } from "./plan-nexthops";
import { nexthopAndRouteLines, renderNexthopOps, splitSix } from "./plan-route-state";
import { planTables, tableOf } from "./plan-tables";
import { planTuntapUndo } from "./plan-tuntap";
import { batchLine } from "./render-batch";
import { IPV6_BATCH, planRules, renderRuleOps } from "./rules";

/**
 * Lines that delete the tun and tap devices made (`created`) and give every
 * link of `before` still present its old name, MTU, flags and addresses.
 */
export function planLinksRestore(
  before: readonly Link[],
  now: readonly Link[],
  created: readonly string[] = [],
): string[] {
  const lines: string[] = planTuntapUndo(before, now, created);
  let links = now.map((l) => ({ ...l }));
  const moved = links.filter((l) => {
    const old = before.find((b) => b.index === l.index);
    return old !== undefined && old.name !== l.name;
  });
  for (const l of moved) {
    if (l.flags.includes("UP")) {
      // The down drops the link's IPv6 addresses (keep_addr_on_down keeps
      // the global ones): those not to keep go first, while `addr del` can
      // find them. planLink puts the rest back with `replace`.
      const old = before.find((b) => b.index === l.index) as Link;
      const keep = new Set(old.addresses.map((a) => `${a.address}/${a.prefix}`));
      for (const a of l.addresses) {
        const cidr = `${a.address}/${a.prefix}`;
        if (a.family === 6 && !keep.has(cidr)) {
          lines.push(batchLine(["addr", "del", cidr, "dev", l.name]));
        }
      }
      lines.push(batchLine(["link", "set", "dev", l.name, "down"]));
    }
    lines.push(batchLine(["link", "set", "dev", l.name, "name", swapName(l.index)]));
  }
  for (const l of moved) {
    const old = before.find((b) => b.index === l.index) as Link;
    lines.push(batchLine(["link", "set", "dev", swapName(l.index), "name", old.name]));
    const wasUp = l.flags.includes("UP");
    links = links.map((x) =>
      x.index === l.index
        ? {
            ...x,
            name: old.name,
            flags: x.flags.filter((f) => f !== "UP"),
            addresses: wasUp ? x.addresses.filter((a) => a.family !== 6) : x.addresses,
          }
        : x,
    );
  }
  for (const old of before) {
    const cur = links.find((l) => l.index === old.index);
    if (!cur || !isManagedLink(old.name)) continue;
    lines.push(
      ...planLink(links, cur, {
        name: "",
        mtu: old.mtu,
        noarp: old.flags.includes("NOARP"),
        addresses: old.addresses,
        up: old.flags.includes("UP"),
        exactAddresses: true,
        exactAttrs: true,
        ...(old.attrs ? { attrs: old.attrs } : {}),
      }),
    );
  }
  return lines;
}

/** Lines (for `ip -batch` and `ip -6 -batch`) that give routes, rules and permanent neighbours their `before` state. */
export function planStateRestore(
  before: FullState,
  now: FullState,
): { batch: string[]; batch6: string[]; batch6First: string[] } {
  // Table local's kernel routes follow the addresses and the links' IPv6
  // (ff00::/8 comes back with carrier, through linkwatch, after the read
  // this plan is made from): appending one the kernel has meanwhile made
  // fails "File exists".
  const kernelLocal = (r: Route) => tableOf(r) === TABLE_LOCAL && r.protocol === "kernel";
  const desired = before.routes.filter((r) => !kernelLocal(r));
  // Nexthop objects exactly as before (when they were read): made again
  // before the routes by them, after the routes without a gateway, the
  // others deleted after (plan-route-state.ts, plan-nexthops.ts);
  // the routes by an object made anew are gone meanwhile.
  const nexthops =
    before.nexthops === undefined ? undefined : planNexthops(now.nexthops ?? [], before.nexthops);
  const alive = nexthops
    ? new Set(withoutNexthops(now.nexthops ?? [], nexthops.recreated).map((n) => n.id))
    : undefined;
  const routesNow = alive
    ? now.routes.filter((r) => r.nhid === undefined || alive.has(r.nhid))
    : now.routes;
  const { main, six } = splitSix(nexthops?.heads ?? []);
  const routeLines = nexthopAndRouteLines(
    planTables(routesNow, desired, { exact: true }),
    main,
    nexthops?.tails ?? [],
  );
  const ruleLines = renderRuleOps(planRules(now.rules, before.rules, { exact: true }));
  const perm = (s: FullState) =>
    s.neighbors.filter(
      (n) => (n.state.includes("PERMANENT") || isProxy(n)) && isManagedLink(n.dev),
    );
  const key = (n: StateNeighbor) => `${neighborKey(n)} ${neighborRest(n)}`;
  const had = new Set(perm(before).map(key));
  const has = new Set(perm(now).map(key));
  const neigh: string[] = [];
  for (const n of perm(now)) {
    if (!had.has(key(n))) neigh.push(renderNeighborDelete(n));
  }
  for (const n of perm(before)) {
    if (has.has(key(n))) continue;
    neigh.push(renderPermanentNeighbor(n));
  }
  return {
    batch: [...routeLines, ...ruleLines.filter((l) => !l.startsWith(IPV6_BATCH)), ...neigh],
    batch6: ruleLines
      .filter((l) => l.startsWith(IPV6_BATCH))
      .map((l) => l.slice(IPV6_BATCH.length)),
    batch6First: renderNexthopOps(six),
  };
}
