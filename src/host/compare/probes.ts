/**
 * Routing lookups drawn from a pod's own routes and rules, for
 * `diff --probes N`: for each route, destinations in its prefix (the
 * first, the middle, the last address) and just beside it, with its tos,
 * its source prefix and its preferred source (an IPv6 link-local one
 * through the route's link); for each rule, lookups that
 * meet all its selectors (source and destination prefixes, mark, protocol,
 * ports, uids, tos, interfaces) and ones that miss each by a little. The
 * same pod gives the same probes; past `max`, an even spread of them. Pure.
 */
import ipaddr from "ipaddr.js";
import {
  type LookupSpec,
  lookupProblem,
  lookupTo,
  lookupWords,
} from "../../net/iproute/route-lookup";
import { RULE_ATTRS } from "../../net/vocabulary/rule-attrs";
import type { CompleteRead, Json } from "./complete-read";

interface Prefix {
  family: 4 | 6;
  first: bigint;
  last: bigint;
}

const bits = (f: 4 | 6) => (f === 4 ? 32 : 128);

function prefixOf(text: unknown, family: 4 | 6): Prefix | undefined {
  if (typeof text !== "string") return undefined;
  if (text === "default" || text === "all")
    return { family, first: 0n, last: (1n << BigInt(bits(family))) - 1n };
  const [addr = "", len] = text.split("/");
  if (!ipaddr.isValid(addr)) return undefined;
  const parsed = ipaddr.parse(addr);
  const f = parsed.kind() === "ipv6" ? 6 : 4;
  if (f !== family) return undefined;
  const n = parsed.toByteArray().reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
  const size = len === undefined ? bits(f) : Number(len);
  if (!Number.isInteger(size) || size < 0 || size > bits(f)) return undefined;
  const host = (1n << BigInt(bits(f) - size)) - 1n;
  return { family: f, first: n & ~host, last: (n & ~host) | host };
}

function text(n: bigint, family: 4 | 6): string {
  const bytes: number[] = [];
  for (let i = bits(family) / 8 - 1; i >= 0; i--) bytes.push(Number((n >> BigInt(i * 8)) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

/** In the prefix (first usable, middle, last) and beside it (just below, just above). */
function points(p: Prefix): { inside: string[]; beside: string[] } {
  const max = (1n << BigInt(bits(p.family))) - 1n;
  const firstIn = p.last > p.first ? p.first + 1n : p.first;
  const inside = [firstIn, p.first + (p.last - p.first) / 2n, p.last];
  const beside = [...(p.first > 0n ? [p.first - 1n] : []), ...(p.last < max ? [p.last + 1n] : [])];
  return {
    inside: [...new Set(inside)].map((n) => text(n, p.family)),
    beside: beside.map((n) => text(n, p.family)),
  };
}

const familyOf = (o: Json): 4 | 6 => (o.family === "inet6" ? 6 : 4);
const num = (v: unknown) =>
  typeof v === "number" ? v : typeof v === "string" ? Number(v) : Number.NaN;

/** `80` or `1000-2000` as [start, end]. */
function range(v: unknown): [number, number] | undefined {
  if (v === undefined) return undefined;
  const [a, b] = String(v).split("-").map(Number);
  return a !== undefined && Number.isInteger(a)
    ? [a, b !== undefined && Number.isInteger(b) ? b : a]
    : undefined;
}

/** fe80::/10: a destination that means something only with its link (a zone). */
const LINK_LOCAL6 = prefixOf("fe80::/10", 6) as Prefix;
const isLinkLocal6 = (to: string) => {
  const p = prefixOf(to, 6);
  return p !== undefined && p.first >= LINK_LOCAL6.first && p.first <= LINK_LOCAL6.last;
};

function routeProbes(r: Json, out: LookupSpec[]): void {
  const family = familyOf(r);
  const dst = prefixOf(r.dst, family);
  if (!dst) return;
  const { inside, beside } = points(dst);
  const tos = r.tos === undefined ? 0 : num(r.tos);
  const from = prefixOf(r.from, family);
  // A link-local destination is asked through the route's link, as traffic
  // to it names its zone: without one, every link's fe80::/64 matches and
  // the kernel takes the one whose link-local came first (the order links
  // came up), which no agent mirrors.
  const dev = typeof r.dev === "string" && r.dev !== "lo" ? r.dev : undefined;
  for (const to of [...inside, ...beside]) {
    const zone = dev && isLinkLocal6(to) ? { oif: dev } : {};
    out.push(lookupTo(to, zone));
    if (tos > 0) out.push(lookupTo(to, { ...zone, tos }));
    if (typeof r.prefsrc === "string") out.push(lookupTo(to, { ...zone, from: r.prefsrc }));
    if (from)
      for (const f of [...points(from).inside.slice(0, 1), ...points(from).beside.slice(0, 1)])
        out.push(lookupTo(to, { ...zone, from: f }));
  }
}

/** A destination drawn from the routes, with its zone when link-local. */
type Target = { to: string; oif?: string };

function ruleProbes(rule: Json, targets: Map<4 | 6, Target[]>, out: LookupSpec[]): void {
  const family = familyOf(rule);
  const dst = prefixOf(
    rule.dst === undefined ? undefined : `${rule.dst}/${rule.dstlen ?? bits(family)}`,
    family,
  );
  const src = prefixOf(
    rule.src === undefined || rule.src === "all"
      ? undefined
      : `${rule.src}/${rule.srclen ?? bits(family)}`,
    family,
  );
  const tos = rule.tos === undefined ? 0 : num(rule.tos);
  const mark = rule.fwmark === undefined ? undefined : num(rule.fwmark);
  const mask = rule.fwmask === undefined ? 0xffffffff : num(rule.fwmask);
  // As the rule's vocabulary reads it: a number, or any name netbase gives (what ip prints).
  const proto = rule.ipproto === undefined ? 0 : num(RULE_ATTRS.get("ipproto")?.read(rule));
  const sport = range(rule.sport);
  const dport = range(rule.dport);
  const uid = rule.uid_start === undefined ? undefined : [num(rule.uid_start), num(rule.uid_end)];
  const tos0 = Number.isInteger(tos) ? tos : 0;
  const meets: Partial<LookupSpec> = {
    ...(src ? { from: points(src).inside[0] as string } : {}),
    ...(tos0 ? { tos: tos0 } : {}),
    ...(mark !== undefined && Number.isInteger(mark) ? { mark: mark >>> 0 } : {}),
    ...(Number.isInteger(proto) && proto > 0 ? { ipproto: proto } : {}),
    ...(sport ? { sport: sport[0] } : {}),
    ...(dport ? { dport: dport[1] } : {}),
    ...(uid && Number.isInteger(uid[0]) ? { uid: uid[0] as number } : {}),
    ...(typeof rule.oif === "string" ? { oif: rule.oif } : {}),
    ...(typeof rule.iif === "string" && rule.iif !== "lo" ? { iif: rule.iif } : {}),
  };
  // Input on iif is simulated from a source address: the rule's, else a destination of the pod's.
  if (meets.iif && !meets.from) meets.from = targets.get(family)?.[0]?.to ?? "";
  // A port selector needs a protocol that carries ports.
  if ((meets.sport || meets.dport) && !meets.ipproto) meets.ipproto = 6;
  const misses: Partial<LookupSpec>[] = [];
  if (src) for (const f of points(src).beside) misses.push({ from: f });
  if (meets.tos) misses.push({ tos: 0 });
  if (meets.mark !== undefined) misses.push({ mark: (meets.mark ^ (mask & -mask)) >>> 0 });
  if (meets.ipproto && rule.ipproto !== undefined)
    misses.push({ ipproto: meets.ipproto === 17 ? 6 : 17 });
  if (sport)
    misses.push(
      { sport: sport[1] },
      { sport: Math.max(1, sport[0] - 1) },
      { sport: Math.min(65535, sport[1] + 1) },
    );
  if (dport)
    misses.push(
      { dport: dport[0] },
      { dport: Math.max(1, dport[0] - 1) },
      { dport: Math.min(65535, dport[1] + 1) },
    );
  if (uid && Number.isInteger(uid[1]))
    misses.push({ uid: uid[1] as number }, { uid: (uid[1] as number) + 1 });
  const tos1: Target[] = dst
    ? [...points(dst).inside, ...points(dst).beside].map((to) => ({ to }))
    : (targets.get(family) ?? []);
  for (const { to, oif } of tos1) {
    // The rule's own oif, else the zone the destination was drawn with.
    const at = { ...(oif ? { oif } : {}), ...meets };
    out.push(lookupTo(to, at));
    for (const m of misses) out.push(lookupTo(to, { ...at, ...m }));
  }
}

/** Up to `max` lookups drawn from `pod`'s routes and rules, without repeats. */
export function drawProbes(pod: CompleteRead, max: number): LookupSpec[] {
  const all: LookupSpec[] = [];
  for (const r of pod.routes) {
    if (r.table === "local" && r.protocol === "kernel" && r.type !== "local") continue;
    routeProbes(r, all);
  }
  const targets = new Map<4 | 6, Target[]>();
  for (const l of all) {
    const f: 4 | 6 = l.to.includes(":") ? 6 : 4;
    const list = targets.get(f) ?? [];
    if (list.length < 4 && !list.some((t) => t.to === l.to))
      list.push({ to: l.to, ...(l.oif ? { oif: l.oif } : {}) });
    targets.set(f, list);
  }
  for (const rule of pod.rules) ruleProbes(rule, targets, all);
  const seen = new Set<string>();
  const unique = all.filter((l) => {
    if (lookupProblem(l)) return false;
    const k = lookupWords(l).join(" ");
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  if (unique.length <= max) return unique;
  return Array.from(
    { length: max },
    (_, i) => unique[Math.floor((i * unique.length) / max)] as LookupSpec,
  );
}
