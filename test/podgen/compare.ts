/**
 * The complete comparison of a pod's read with its guest's: objects matched
 * by identity (normalise.ts), then what is left paired by a looser key and
 * compared field by field, then what is on one side only; the addresses'
 * order per link; each difference in words, with the vocabulary items
 * (aspects.ts) it concerns. Leaves out only what ignore.ts lists.
 */
import { aspectsOf, fieldAspects } from "./aspects";
import type { Kind } from "./ignore";
import { type Normalised, normalise, type Obj } from "./normalise";
import type { NetnsRead } from "./read";

export interface Difference {
  kind: Kind;
  what: string;
  /** "pod only", "guest only", "order", or the field that differs. */
  field: string;
  text: string;
  /** Vocabulary items: "route tos", "address broadcast", ... */
  aspects: string[];
}

export function compareReads(pod: NetnsRead, guest: NetnsRead): Difference[] {
  return compareNormalised(normalise(pod), normalise(guest), {
    pod: carrierByName(pod),
    guest: carrierByName(guest),
  });
}

/** Each link's name to whether it has carrier (LOWER_UP). */
function carrierByName(r: NetnsRead): Map<string, boolean> {
  return new Map(
    r.links.map((l) => [String(l.ifname), ((l.flags ?? []) as string[]).includes("LOWER_UP")]),
  );
}

export interface Carriers {
  pod: ReadonlyMap<string, boolean>;
  guest: ReadonlyMap<string, boolean>;
}

const KERNEL_IPV6_LOCAL = new Set(["multicast", "anycast", "local"]);

/** IGNORED.routeCarrierOnly: a kernel IPv6 route of table local on a link with carrier on this side only. */
function carriers(o: Obj, side: "pod" | "guest", c: Carriers | undefined): boolean {
  if (!c || o.kind !== "route") return false;
  const f = o.fields;
  if (f.get("table") !== "local" || f.get("protocol") !== "kernel") return false;
  if (f.get("family") !== "inet6" || !KERNEL_IPV6_LOCAL.has(f.get("type") ?? "")) return false;
  const dev = f.get("dev") ?? "";
  return c[side].get(dev) === true && (side === "pod" ? c.guest : c.pod).get(dev) === false;
}

export function compareNormalised(
  pod: Normalised,
  guest: Normalised,
  carrier?: Carriers,
): Difference[] {
  const diffs: Difference[] = [];
  const podOnly: Obj[] = [];
  const guestOnly: Obj[] = [];
  const kinds = new Set([...pod.objects, ...guest.objects].map((o) => o.kind));
  for (const kind of kinds) {
    const p = pod.objects.filter((o) => o.kind === kind);
    const g = guest.objects.filter((o) => o.kind === kind);
    const [restP, restG] = pairBy(p, g, (o) => o.key, diffs);
    const [onlyP, onlyG] = pairBy(restP, restG, (o) => o.loose, diffs);
    podOnly.push(...onlyP.filter((o) => !carriers(o, "pod", carrier)));
    guestOnly.push(...onlyG.filter((o) => !carriers(o, "guest", carrier)));
  }
  diffs.push(
    ...oneSided(podOnly, guestOnly, "pod only"),
    ...oneSided(guestOnly, podOnly, "guest only"),
  );
  for (const [k, order] of pod.addressOrder) {
    const other = guest.addressOrder.get(k);
    if (!other) continue;
    const common = order.keys.filter((x) => other.keys.includes(x));
    const theirs = other.keys.filter((x) => order.keys.includes(x));
    if (common.join() !== theirs.join()) {
      const show = (keys: string[]) => keys.map((x) => x.split("|")[2]).join(", ");
      diffs.push({
        kind: "address",
        what: order.what,
        field: "order",
        text: `${order.what} in another order: pod ${show(common)}; guest ${show(theirs)}`,
        aspects: ["address order"],
      });
    }
  }
  return diffs;
}

/** Pairs objects with equal keys (greedy, fewest differing fields first); returns the rest. */
function pairBy(p: Obj[], g: Obj[], key: (o: Obj) => string, diffs: Difference[]): [Obj[], Obj[]] {
  const left = [...g];
  const restP: Obj[] = [];
  for (const o of p) {
    const candidates = left.filter((x) => key(x) === key(o));
    if (candidates.length === 0) {
      restP.push(o);
      continue;
    }
    const best = candidates.reduce((a, b) =>
      fieldDiffs(o, b).length < fieldDiffs(o, a).length ? b : a,
    );
    left.splice(left.indexOf(best), 1);
    diffs.push(...fieldDiffs(o, best));
  }
  return [restP, left];
}

function fieldDiffs(p: Obj, g: Obj): Difference[] {
  const out: Difference[] = [];
  for (const f of new Set([...p.fields.keys(), ...g.fields.keys()])) {
    const a = p.fields.get(f);
    const b = g.fields.get(f);
    if (a === b) continue;
    // IGNORED.addressGuestNodad: the agent's own nodad, where the pod has none.
    if (p.kind === "address" && f === "nodad" && a === undefined && b === "true") continue;
    const say = (v: string | undefined) => (v === undefined ? "(none)" : v === "" ? "(empty)" : v);
    out.push({
      kind: p.kind,
      what: p.what,
      field: f,
      text: `${p.what}: ${f} ${say(a)} in the pod, ${say(b)} in the guest`,
      aspects: fieldAspects(p, f, a, b),
    });
  }
  return out;
}

/**
 * Objects on one side only. A link's sysctls missing with the link itself
 * (its directory absent on the other side) are said once for the link.
 */
function oneSided(objs: Obj[], other: Obj[], side: "pod only" | "guest only"): Difference[] {
  const out: Difference[] = [];
  const otherDirs = new Set(other.filter((o) => o.kind === "sysctl").map((o) => sysctlDir(o.key)));
  const byDir = new Map<string, Obj[]>();
  for (const o of objs) {
    const dir = o.kind === "sysctl" ? sysctlDir(o.key) : undefined;
    if (dir?.includes("/") && !otherDirs.has(dir)) {
      byDir.set(dir, [...(byDir.get(dir) ?? []), o]);
      continue;
    }
    out.push({
      kind: o.kind,
      what: o.what,
      field: side,
      text: `${side}: ${describe(o)}`,
      aspects: aspectsOf(o),
    });
  }
  for (const [dir, list] of byDir) {
    out.push({
      kind: "sysctl",
      what: `sysctls net/${dir}/*`,
      field: side,
      text: `${side}: the ${list.length} sysctls of net/${dir}/ (no such directory on the other side)`,
      aspects: [...new Set(list.flatMap(aspectsOf))],
    });
  }
  return out;
}

/** ipv4/conf/eth0/rp_filter -> ipv4/conf/eth0 (a per-link directory), else the top. */
function sysctlDir(path: string): string {
  const m = /^(ipv[46]\/(?:conf|neigh)\/[^/]+)\//.exec(path);
  return m ? (m[1] as string) : "";
}

function describe(o: Obj): string {
  const fields = [...o.fields]
    .filter(([, v]) => v !== "")
    .map(([k, v]) => (v === "true" ? k : `${k} ${v}`));
  return `${o.what} {${fields.join(", ")}}`;
}
