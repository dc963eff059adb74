/**
 * One routing lookup, `ip route get TO [from FROM] [iif IIF] [oif OIF]
 * [mark M] [ipproto P] [sport P] [dport P] [uid U] [tos T]`: its checks
 * and its words. Every value is checked before any word is made (an
 * address by ipaddr.js, a name by the link-name rule, a number by its
 * range), so no value can read as another keyword or an option of ip
 * (`-batch`); 0 and "" leave a selector out. Pure.
 */
import { parseIp } from "../model/address";

export interface LookupSpec {
  to: string;
  from: string;
  iif: string;
  oif: string;
  mark: number;
  ipproto: number;
  sport: number;
  dport: number;
  uid: number;
  tos: number;
}

/**
 * IP protocols by the names iproute2 prints in a rule's `ipproto` and takes
 * in `route get ipproto`. A Map: a name is one of these or none, never a
 * property every object has (`toString`, `__proto__`).
 */
export const IP_PROTOCOLS: ReadonlyMap<string, number> = new Map(
  Object.entries({
    icmp: 1,
    igmp: 2,
    tcp: 6,
    udp: 17,
    dccp: 33,
    gre: 47,
    esp: 50,
    ah: 51,
    "ipv6-icmp": 58,
    sctp: 132,
    udplite: 136,
  }),
);

/** Lookups in one RouteGet call, and probes in one `diff --probes`. */
export const MAX_LOOKUPS = 1000;

/** A field that fails its check: its name, its value, and why. */
export interface LookupProblem {
  field: keyof LookupSpec;
  value: string | number;
  why: string;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$/;
const NAME_RULE =
  "is not an interface name (1-15 of letters, digits, '_', '.', '-'; not starting with '-' or '.')";

/** Numbers: [field, lowest, highest] (0 leaves it out). */
const RANGES = [
  ["mark", 1, 0xffff_ffff],
  ["ipproto", 1, 255],
  ["sport", 1, 65535],
  ["dport", 1, 65535],
  // 4294967295 is "no uid" to the kernel.
  ["uid", 1, 0xffff_fffe],
  ["tos", 1, 255],
] as const;

/** The first problem of `l`, or undefined when every field passes. */
export function lookupProblem(l: LookupSpec): LookupProblem | undefined {
  const to = parseIp(l.to);
  if (l.to === "") return { field: "to", value: l.to, why: "is required (an address)" };
  if (typeof to === "string") return { field: "to", value: l.to, why: `is not an address: ${to}` };
  if (l.from !== "") {
    const from = parseIp(l.from);
    if (typeof from === "string")
      return { field: "from", value: l.from, why: `is not an address: ${from}` };
    if (from.family !== to.family)
      return {
        field: "from",
        value: l.from,
        why: `is IPv${from.family}, the destination IPv${to.family}`,
      };
  }
  for (const field of ["iif", "oif"] as const) {
    const v = l[field];
    if (v !== "" && !NAME.test(v)) return { field, value: v, why: NAME_RULE };
  }
  for (const [field, lo, hi] of RANGES) {
    const v = l[field];
    if (!Number.isInteger(v) || v < 0 || (v !== 0 && (v < lo || v > hi)))
      return { field, value: v, why: `is out of range (${lo}-${hi}, or 0 for none)` };
  }
  return undefined;
}

/** The words after `ip route get`, of a lookup that passed {@link lookupProblem}. */
export function lookupWords(l: LookupSpec): string[] {
  const to = parseIp(l.to);
  const t = [typeof to === "string" ? l.to : to.text];
  if (l.from) {
    const from = parseIp(l.from);
    t.push("from", typeof from === "string" ? l.from : from.text);
  }
  if (l.iif) t.push("iif", l.iif);
  if (l.oif) t.push("oif", l.oif);
  if (l.mark) t.push("mark", `0x${l.mark.toString(16)}`);
  if (l.ipproto) t.push("ipproto", String(l.ipproto));
  if (l.sport) t.push("sport", String(l.sport));
  if (l.dport) t.push("dport", String(l.dport));
  if (l.uid) t.push("uid", String(l.uid));
  if (l.tos) t.push("tos", `0x${l.tos.toString(16).padStart(2, "0")}`);
  return t;
}

/** A lookup with every selector left out but the destination. */
export function lookupTo(to: string, more: Partial<LookupSpec> = {}): LookupSpec {
  return {
    to,
    from: "",
    iif: "",
    oif: "",
    mark: 0,
    ipproto: 0,
    sport: 0,
    dport: 0,
    uid: 0,
    tos: 0,
    ...more,
  };
}
