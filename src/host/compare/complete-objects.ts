/**
 * A complete read (complete-read.ts) as flat objects with an identity,
 * minus exactly what mirror-differences.ts lists. Links are known by MAC
 * (by name when they have none: lo, a tun); addresses by link, family,
 * address, prefix and peer; routes and rules by their whole content, with
 * a looser key (family, table, destination, source prefix; family,
 * priority) that pairs two that differ in an attribute; neighbours by
 * family, device, proxy and address; nexthop objects by id. Pure.
 */
import type { CompleteRead, Json } from "./complete-read";
import {
  isKernelLinkLocal,
  isMulticast,
  type Kind,
  LEARNED_STATES,
  MIRROR_DIFFERENCES as M,
} from "./mirror-differences";

export interface Obj {
  kind: Kind;
  /** Exact identity: equal keys are the same object. */
  key: string;
  /** Pairs objects that differ in some field. */
  loose: string;
  /** The object in words, for the rows. */
  what: string;
  /** Flattened attributes, name to value. */
  fields: Map<string, string>;
}

export interface Normalised {
  objects: Obj[];
  /** Per link and family, the address keys in the kernel's order (its source choice). */
  addressOrder: Map<string, { what: string; keys: string[] }>;
}

const scalar = (v: unknown) =>
  v === null || v === true ? "true" : typeof v === "string" ? v : JSON.stringify(v);

/**
 * Nested objects to dotted names; a list of scalars is a set (sorted); a
 * list of objects is one field, its items in order (`via A dev B | ...`);
 * `metrics` (a list of one object) flattens as an object.
 */
export function flatten(
  obj: Json,
  prefix = "",
  out = new Map<string, string>(),
): Map<string, string> {
  for (const [k, v] of Object.entries(obj)) {
    const name = prefix + k;
    if (Array.isArray(v)) {
      if (v.every((x) => x === null || typeof x !== "object"))
        out.set(name, v.map(scalar).sort().join(","));
      else if (k === "metrics" && v.length === 1) flatten(v[0] as Json, `${name}.`, out);
      else
        out.set(
          name,
          v
            .map((x) => (x && typeof x === "object" ? words(flatten(x as Json)) : scalar(x)))
            .join(" | "),
        );
    } else if (v !== null && typeof v === "object") flatten(v as Json, `${name}.`, out);
    else out.set(name, scalar(v));
  }
  return out;
}

/** Fields as `name value` words (`name` alone for a set flag). */
export function words(fields: Map<string, string>): string {
  const t: string[] = [];
  // An empty list (`flags: []`) says nothing.
  for (const [k, v] of fields) if (v !== "") t.push(v === "true" ? k : `${k} ${v}`);
  return t.join(" ");
}

/** Fields as one text, `k=v` joined by `;` in key order: equal texts, equal fields. */
export function canonical(fields: Iterable<readonly [string, string]>): string {
  return [...fields]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join(";");
}

function without(o: Json, drop: readonly string[]): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(o)) if (!drop.includes(k)) out[k] = v;
  return out;
}

/** `flags` without those listed; the same inside a route's hops. */
function dropFlags(o: Json, flags: readonly string[]): Json {
  const out: Json = { ...o };
  if (Array.isArray(o.flags)) out.flags = o.flags.filter((f) => !flags.includes(String(f)));
  if (Array.isArray(o.nexthops)) {
    out.nexthops = o.nexthops.map((h) =>
      h && typeof h === "object" && !Array.isArray(h) ? dropFlags(h as Json, flags) : h,
    );
  }
  return out;
}

/** A link's identity: its MAC when it has one (an ether link), else its name. */
function linkKey(l: Json): string {
  const mac = typeof l.address === "string" ? l.address.toLowerCase() : "";
  if (l.link_type === "ether" && mac !== "" && mac !== "00:00:00:00:00:00") return `mac ${mac}`;
  return `name ${String(l.ifname)}`;
}

/** 4294967295 is forever (INFINITY_LIFE_TIME); 0 deprecated (preferred) or expired; else counting down. */
function lifetime(v: unknown): string {
  if (v === undefined || v === 4294967295) return "forever";
  return v === 0 ? "0" : "finite";
}

const familyWord = (f: unknown) => (f === "inet6" ? " (v6)" : "");

function linkObjects(read: CompleteRead, out: Obj[]): void {
  const drop = [
    ...M.linkIndex.fields,
    ...M.linkDevice.fields,
    ...M.linkQdisc.fields,
    ...M.linkCarrier.fields,
  ];
  for (const l of read.links) {
    const key = linkKey(l);
    const fields = flatten(dropFlags(without(l, [...drop, "addr_info"]), M.linkCarrier.flags));
    out.push({ kind: "link", key, loose: key, what: `link ${String(l.ifname)}`, fields });
  }
}

function addressObjects(read: CompleteRead, out: Obj[], order: Normalised["addressOrder"]): void {
  for (const l of read.addresses) {
    const lk = linkKey(l);
    const info = Array.isArray(l.addr_info) ? (l.addr_info as unknown[]) : [];
    for (const x of info) {
      if (x === null || typeof x !== "object") continue;
      const a = x as Json;
      const local = String(a.local);
      if (a.family === "inet6" && isKernelLinkLocal(local, Number(a.prefixlen))) continue;
      const peer = typeof a.address === "string" && a.address !== local ? ` peer ${a.address}` : "";
      const spec = `${local}/${String(a.prefixlen)}${peer}`;
      const key = `${lk}|${String(a.family)}|${spec}`;
      const fields = flatten(
        without(a, [
          "family",
          "local",
          "prefixlen",
          "address",
          "valid_life_time",
          "preferred_life_time",
          ...M.addressTentative.fields,
        ]),
      );
      fields.set("valid_lft", lifetime(a.valid_life_time));
      fields.set("preferred_lft", lifetime(a.preferred_life_time));
      out.push({
        kind: "address",
        key,
        loose: `${lk}|${String(a.family)}|${local}`,
        what: `address ${spec} on ${String(l.ifname)}`,
        fields,
      });
      const ok = `${lk}|${String(a.family)}`;
      const o = order.get(ok) ?? {
        what: `addresses${familyWord(a.family)} of ${String(l.ifname)}`,
        keys: [],
      };
      o.keys.push(key);
      order.set(ok, o);
    }
  }
}

/** `route [TYPE] DST [from F] [tos T] [metric M] table T`, "(v6)" for IPv6. */
function routeWhat(r: Json): string {
  const t: string[] = ["route"];
  if (r.type !== undefined && r.type !== "unicast") t.push(String(r.type));
  t.push(String(r.dst) + familyWord(r.family));
  if (r.from !== undefined) t.push("from", String(r.from));
  if (r.tos !== undefined) t.push("tos", String(r.tos));
  if (r.metric !== undefined && r.metric !== 0) t.push("metric", String(r.metric));
  t.push("table", String(r.table ?? "main"));
  return t.join(" ");
}

function routeObjects(read: CompleteRead, out: Obj[]): void {
  for (const r of read.routes) {
    if (
      r.table === "local" &&
      r.type === "local" &&
      r.family === "inet6" &&
      isKernelLinkLocal(String(r.dst))
    )
      continue;
    const fields = flatten(dropFlags(without(r, M.routeExpires.fields), M.routeCarrier.flags));
    if (r.expires !== undefined) fields.set("expires", "finite");
    out.push({
      kind: "route",
      key: canonical(fields),
      loose: `${String(r.family)}|${String(r.table)}|${String(r.dst)}|${String(r.from ?? "")}`,
      what: routeWhat(r),
      fields,
    });
  }
}

/** Name to MAC of the links with the NOARP flag (M.neighbourNoarpLink). */
function noarpLinkAddresses(links: readonly Json[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const l of links) {
    const flags = Array.isArray(l.flags) ? l.flags.map(String) : [];
    if (flags.includes("NOARP") && typeof l.address === "string")
      out.set(String(l.ifname), l.address);
  }
  return out;
}

function otherObjects(read: CompleteRead, out: Obj[]): void {
  for (const r of read.rules) {
    const fields = flatten(r);
    out.push({
      kind: "rule",
      key: canonical(fields),
      loose: `${String(r.family)}|${String(r.priority)}`,
      what: `rule ${String(r.priority)}${familyWord(r.family)}`,
      fields,
    });
  }
  const noarpLinks = noarpLinkAddresses(read.links);
  for (const n of read.neighbours) {
    const state = Array.isArray(n.state) ? n.state.map(String) : [];
    if (state.some((s) => LEARNED_STATES.has(s))) continue;
    if (state.includes("NOARP") && isMulticast(String(n.dst))) continue;
    if (state.includes("NOARP") && noarpLinks.get(String(n.dev)) === String(n.lladdr)) continue;
    const proxy = "proxy" in n ? "proxy " : "";
    const key = `${String(n.family)}|${String(n.dev)}|${proxy}${String(n.dst)}`;
    out.push({
      kind: "neighbour",
      key,
      loose: key,
      what: `neighbour ${proxy}${String(n.dst)} dev ${String(n.dev)}`,
      fields: flatten(n),
    });
  }
  for (const h of read.nexthops ?? []) {
    const key = `id ${String(h.id)}`;
    out.push({
      kind: "nexthop",
      key,
      loose: key,
      what: `nexthop ${key}`,
      fields: flatten(dropFlags(h, M.routeCarrier.flags)),
    });
  }
}

/** The objects of a read, minus what MIRROR_DIFFERENCES lists (sysctls: complete-diff.ts). */
export function normalise(read: CompleteRead): Normalised {
  const objects: Obj[] = [];
  const addressOrder: Normalised["addressOrder"] = new Map();
  linkObjects(read, objects);
  addressObjects(read, objects, addressOrder);
  routeObjects(read, objects);
  otherObjects(read, objects);
  return { objects, addressOrder };
}
