/**
 * The complete comparison of a pod's read with its guest's: objects
 * matched by identity (complete-objects.ts), what is left paired by a
 * looser key and compared field by field, then what is on one side only;
 * the addresses' order per link; and the sysctls, each side's value taken
 * against its own kernel's fresh namespace. Leaves out exactly what
 * mirror-differences.ts lists: anything else that differs is a finding,
 * something the mirror does not hold. Pure.
 */
import { normaliseSysctlValue } from "../../net/sysctl/sysctl-keys";
import { type Normalised, normalise, type Obj, words } from "./complete-objects";
import type { CompleteRead } from "./complete-read";
import { type Kind, MIRROR_DIFFERENCES } from "./mirror-differences";

export interface Finding {
  kind: Kind;
  /** The object in words ("route 10.8.0.0/16 tos 0x04 table main"). */
  what: string;
  /** The attribute that differs, or "pod only", "guest only", "order". */
  field: string;
  /** Its value on each side; "-" for none. */
  pod: string;
  guest: string;
  /**
   * Carrier alone explains it (MIRROR_DIFFERENCES.routeCarrierOnly): named,
   * not counted.
   */
  carrier?: true;
}

export function compareComplete(pod: CompleteRead, guest: CompleteRead): Finding[] {
  const carrier = { pod: carrierByName(pod), guest: carrierByName(guest) };
  return [
    ...compareNormalised(normalise(pod), normalise(guest), carrier),
    ...compareSysctls(pod, guest),
  ];
}

/** Each link's name to whether it has carrier (LOWER_UP). */
function carrierByName(read: CompleteRead): Map<string, boolean> {
  return new Map(
    read.links.map((l) => [
      String(l.ifname),
      Array.isArray(l.flags) && (l.flags as unknown[]).includes("LOWER_UP"),
    ]),
  );
}

/** Carrier of each side's links by name; absent: not known (nothing is carrier's). */
interface Carriers {
  pod: ReadonlyMap<string, boolean>;
  guest: ReadonlyMap<string, boolean>;
}

const KERNEL_IPV6_LOCAL = new Set(["multicast", "anycast", "local"]);

/**
 * Whether a route on one side only is one the kernel makes in table local
 * once IPv6 is up with carrier, on a link with carrier on that side only
 * (MIRROR_DIFFERENCES.routeCarrierOnly).
 */
function carriers(o: Obj, side: "pod" | "guest", c: Carriers | undefined): boolean {
  if (!c || o.kind !== "route") return false;
  const f = o.fields;
  if (f.get("table") !== "local" || f.get("protocol") !== "kernel") return false;
  if (f.get("family") !== "inet6" || !KERNEL_IPV6_LOCAL.has(f.get("type") ?? "")) return false;
  const dev = f.get("dev");
  if (dev === undefined) return false;
  const other = side === "pod" ? c.guest : c.pod;
  return c[side].get(dev) === true && other.get(dev) === false;
}

const NONE = "-";

function fieldFindings(p: Obj, g: Obj): Finding[] {
  const out: Finding[] = [];
  for (const f of new Set([...p.fields.keys(), ...g.fields.keys()])) {
    const a = p.fields.get(f);
    const b = g.fields.get(f);
    if (a === b) continue;
    // MIRROR_DIFFERENCES.addressGuestNodad: the agent's own nodad, where the pod has none.
    if (p.kind === "address" && f === "nodad" && a === undefined && b === "true") continue;
    out.push({ kind: p.kind, what: p.what, field: f, pod: a ?? NONE, guest: b ?? NONE });
  }
  return out;
}

/** Pairs equal keys (the candidate with fewest differing fields first); the rest is returned. */
function pairBy(p: Obj[], g: Obj[], key: (o: Obj) => string, out: Finding[]): [Obj[], Obj[]] {
  const byKey = new Map<string, Obj[]>();
  for (const o of g) {
    const k = key(o);
    const list = byKey.get(k);
    if (list) list.push(o);
    else byKey.set(k, [o]);
  }
  const restP: Obj[] = [];
  const taken = new Set<Obj>();
  for (const o of p) {
    const candidates = byKey.get(key(o));
    if (!candidates || candidates.length === 0) {
      restP.push(o);
      continue;
    }
    let best = 0;
    if (candidates.length > 1) {
      let fewest = Number.POSITIVE_INFINITY;
      candidates.forEach((c, i) => {
        const n = fieldFindings(o, c).length;
        if (n < fewest) [fewest, best] = [n, i];
      });
    }
    const [match] = candidates.splice(best, 1) as [Obj];
    taken.add(match);
    out.push(...fieldFindings(o, match));
  }
  return [restP, g.filter((o) => !taken.has(o))];
}

function compareNormalised(pod: Normalised, guest: Normalised, carrier?: Carriers): Finding[] {
  const out: Finding[] = [];
  const kinds = [...new Set([...pod.objects, ...guest.objects].map((o) => o.kind))];
  for (const kind of kinds) {
    const p = pod.objects.filter((o) => o.kind === kind);
    const g = guest.objects.filter((o) => o.kind === kind);
    const [restP, restG] = pairBy(p, g, (o) => o.key, out);
    const [onlyP, onlyG] = pairBy(restP, restG, (o) => o.loose, out);
    const mark = (o: Obj, side: "pod" | "guest") =>
      carriers(o, side, carrier) ? { carrier: true as const } : {};
    for (const o of onlyP) {
      const f = { kind, what: o.what, field: "pod only", pod: words(o.fields), guest: NONE };
      out.push({ ...f, ...mark(o, "pod") });
    }
    for (const o of onlyG) {
      const f = { kind, what: o.what, field: "guest only", pod: NONE, guest: words(o.fields) };
      out.push({ ...f, ...mark(o, "guest") });
    }
  }
  for (const [k, order] of pod.addressOrder) {
    const other = guest.addressOrder.get(k);
    if (!other) continue;
    const common = order.keys.filter((x) => other.keys.includes(x));
    const theirs = other.keys.filter((x) => order.keys.includes(x));
    if (common.join() === theirs.join()) continue;
    const show = (keys: string[]) => keys.map((x) => x.split("|")[2]).join(", ");
    out.push({
      kind: "address",
      what: order.what,
      field: "order",
      pod: show(common),
      guest: show(theirs),
    });
  }
  return out;
}

/**
 * A per-link file's value in a fresh namespace: the same path where it
 * exists (lo, all, default), else its `default` entry, else (neigh: a
 * namespace has no neigh/default) the loopback's.
 */
export function freshValue(path: string, fresh: ReadonlyMap<string, string>): string | undefined {
  const own = fresh.get(path);
  if (own !== undefined) return own;
  const m = /^(ipv[46]\/(?:conf|neigh))\/[^/]+\/([^/]+)$/.exec(path);
  if (!m) return undefined;
  return fresh.get(`${m[1]}/default/${m[2]}`) ?? fresh.get(`${m[1]}/lo/${m[2]}`);
}

/** `net.` and the path in sysctl(8)'s words: "/" as ".", and a "." in a part as "/". */
export function sysctlName(path: string): string {
  return `net.${path
    .split("/")
    .map((p) => p.replaceAll(".", "/"))
    .join(".")}`;
}

function compareSysctls(pod: CompleteRead, guest: CompleteRead): Finding[] {
  const out: Finding[] = [];
  const same = (a: string, b: string | undefined) =>
    b !== undefined && normaliseSysctlValue(a) === normaliseSysctlValue(b);
  // MIRROR_DIFFERENCES.sysctlOwnDefault / sysctlOneKernel: set = away from its own kernel's
  // fresh value; sysctlGlobal: a file its fresh namespace lacks is not the namespace's.
  const set = (v: string | undefined, path: string, fresh: ReadonlyMap<string, string>) => {
    const f = freshValue(path, fresh);
    return v !== undefined && f !== undefined && !same(v, f);
  };
  const report: readonly string[] = MIRROR_DIFFERENCES.sysctlReport.paths;
  // A link's own files come and go with it: a link on one side only is one finding of its own.
  const names = (r: CompleteRead) => new Set(r.links.map((l) => String(l.ifname)));
  const [podLinks, guestLinks] = [names(pod), names(guest)];
  const paths = [...new Set([...pod.sysctls.keys(), ...guest.sysctls.keys()])].sort();
  for (const path of paths) {
    if (report.includes(path)) continue;
    const link = /^ipv[46]\/(?:conf|neigh)\/([^/]+)\//.exec(path)?.[1];
    if (
      link !== undefined &&
      link !== "all" &&
      link !== "default" &&
      podLinks.has(link) !== guestLinks.has(link)
    )
      continue;
    const p = pod.sysctls.get(path);
    const g = guest.sysctls.get(path);
    if (p !== undefined && same(p, g)) continue;
    if (!set(p, path, pod.fresh) && !set(g, path, guest.fresh)) continue;
    const field = p === undefined ? "guest only" : g === undefined ? "pod only" : "value";
    const show = (v: string | undefined) => (v === undefined ? NONE : normaliseSysctlValue(v));
    out.push({
      kind: "sysctl",
      what: `sysctl ${sysctlName(path)}`,
      field,
      pod: show(p),
      guest: show(g),
    });
  }
  return out;
}
