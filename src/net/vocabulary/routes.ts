/**
 * The kernel's words for routes, written once: next-hop flag bits, scopes,
 * table ids, the protocols iproute2 knows by name, the defaults a route
 * takes when a field is left out, and how a destination is written
 * canonically. The model speaks iproute2's names ("link", "main",
 * "kernel"); the numbers behind them live here.
 */
import {
  defaultDst,
  type Family,
  ipv4NetworkPrefix,
  isDigits3,
  isNetwork4,
  maxPrefix,
  networkText,
  parseIp,
} from "../model/address";

/** Next-hop flags (rtnh_flags, RTNH_F_* in linux/rtnetlink.h). */
export const RTNH_F = {
  DEAD: 0x1,
  PERVASIVE: 0x2,
  /** The gateway is on the link, no route to it is needed (`onlink`). */
  ONLINK: 0x4,
  OFFLOAD: 0x8,
  LINKDOWN: 0x10,
  UNRESOLVED: 0x20,
  TRAP: 0x40,
} as const;

export const RTNH_F_ONLINK = RTNH_F.ONLINK;

/**
 * The flags the kernel sets on a route it reports: a request may carry
 * them (a route list read back elsewhere), they ask for nothing. Bit 7 has
 * no name in linux/rtnetlink.h; it has been taken (and ignored) since the
 * first version, and still is.
 */
export const RTNH_F_KERNEL_SET =
  RTNH_F.DEAD | RTNH_F.OFFLOAD | RTNH_F.LINKDOWN | RTNH_F.UNRESOLVED | RTNH_F.TRAP | 0x80;

/** Route scopes (rtm_scope, RT_SCOPE_*). */
export const SCOPE_UNIVERSE = 0;
export const SCOPE_SITE = 200;
export const SCOPE_LINK = 253;
export const SCOPE_HOST = 254;
export const SCOPE_NOWHERE = 255;

/** Scope names as iproute2 prints them (rtnl_rtscope_tab); 0 is "global". */
const SCOPE_NAMES: Record<number, string> = {
  [SCOPE_UNIVERSE]: "global",
  [SCOPE_SITE]: "site",
  [SCOPE_LINK]: "link",
  [SCOPE_HOST]: "host",
  [SCOPE_NOWHERE]: "nowhere",
};

// The name tables below are Maps: a name ip prints (from the host's own
// rt_scopes, rt_tables, rt_dsfield files) is one of theirs or none, never a
// property every object has (`toString`, `__proto__`).
const SCOPE_IDS: ReadonlyMap<string, number> = new Map([
  ["universe", SCOPE_UNIVERSE],
  ...Object.entries(SCOPE_NAMES).map(([id, name]) => [name, Number(id)] as const),
]);

/** A scope by its iproute2 name, else the number as text. */
export function scopeName(scope: number): string {
  return SCOPE_NAMES[scope] ?? String(scope);
}

/** A scope as `ip -json` gives it (a name, a number, or a number as text) to its id; 0 when unknown. */
export function parseScope(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "string") return SCOPE_IDS.get(v) ?? (/^\d+$/.test(v) ? Number(v) : 0);
  return 0;
}

/** Routing table ids (RT_TABLE_*); a guest has no rt_tables names of its own. */
export const TABLE_DEFAULT = 253;
export const TABLE_MAIN = 254;
export const TABLE_LOCAL = 255;

const TABLE_IDS: ReadonlyMap<string, number> = new Map([
  ["default", TABLE_DEFAULT],
  ["main", TABLE_MAIN],
  ["local", TABLE_LOCAL],
]);

/** A table as `ip -json` prints it ("main", "100") to its id; undefined for names we cannot map. */
export function parseTable(text: string): number | undefined {
  const named = TABLE_IDS.get(text);
  if (named !== undefined) return named;
  if (!/^\d{1,10}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 0xffffffff ? n : undefined;
}

/** A table id as iproute2 names it: the three kernel names, else the number. */
export function formatTable(id: number): string {
  if (id === TABLE_MAIN) return "main";
  if (id === TABLE_LOCAL) return "local";
  if (id === TABLE_DEFAULT) return "default";
  return String(id);
}

/** The route type when none is given (RTN_UNICAST). */
export const DEFAULT_ROUTE_TYPE = "unicast";

/** The protocol of a route added without one (`ip route` uses RTPROT_BOOT). */
export const DEFAULT_PROTOCOL = "boot";

/**
 * Route protocols iproute2 knows by name without /etc/iproute2
 * (rtnl_rtprot_tab), with their numbers (RTPROT_*). A Map: an inherited
 * property (`toString`) is no name.
 */
const PROTOCOLS: ReadonlyMap<string, number> = new Map(
  Object.entries({
    redirect: 1,
    kernel: 2,
    boot: 3,
    static: 4,
    gated: 8,
    ra: 9,
    mrt: 10,
    zebra: 11,
    bird: 12,
    dnrouted: 13,
    xorp: 14,
    ntk: 15,
    dhcp: 16,
    keepalived: 18,
    babel: 42,
    openr: 99,
    bgp: 186,
    isis: 187,
    ospf: 188,
    rip: 189,
    eigrp: 192,
  }),
);
const PROTOCOL_NAMES: ReadonlyMap<number, string> = new Map(
  [...PROTOCOLS].map(([name, id]) => [id, name]),
);

/** Whether `text` names a route protocol iproute2 takes: a name it knows, or 0-255. */
export function isRouteProtocol(text: string): boolean {
  return PROTOCOLS.has(text) || /^([1-9]?\d|1\d\d|2[0-4]\d|25[0-5])$/.test(text);
}

/**
 * A protocol as a batch line writes it: its number (`unspec` is 0); a word
 * that is neither a known name nor a number is left as it is (the token
 * check refuses what is unsafe). iproute2 (6.1 at least) remembers the last
 * protocol it looked up by name and, once a line has given a number,
 * answers that name with the number: `proto static`, `proto 200`, `proto
 * static` in one batch, or in the agent's resident ip process, made the
 * third 200. Numbers go through no such memory.
 */
export function protocolWord(text: string): string {
  if (text === "unspec") return "0";
  const id = PROTOCOLS.get(text);
  return id === undefined ? text : String(id);
}

/** A protocol word of a batch line as iproute2 prints it: a number it has a name for as that name. */
export function protocolName(word: string): string {
  return /^\d{1,3}$/.test(word) ? (PROTOCOL_NAMES.get(Number(word)) ?? word) : word;
}

/** An IPv6 route's metric when none is given (IP6_RT_PRIO_USER); IPv4's is 0. */
export const DEFAULT_V6_METRIC = 1024;

/** IPv6 prefix routes' metric when the address sets none (IP6_RT_PRIO_ADDRCONF). */
export const KERNEL_V6_METRIC = 256;

/**
 * A destination as a canonical CIDR: "" and "default" are the family's
 * default, a bare address is a host route, host bits are cleared.
 * Undefined when it is not an address or prefix of that family.
 */
export function canonicalDst(dest: string, family: Family): string | undefined {
  if (dest === "" || dest === "default") return defaultDst(family);
  // The common case, a canonical IPv4 network, is its own answer.
  if (family === 4 && ipv4NetworkPrefix(dest) >= 0) return dest;
  const slash = dest.indexOf("/");
  const addr = slash < 0 ? dest : dest.slice(0, slash);
  const ip = parseIp(addr);
  if (typeof ip === "string" || ip.family !== family) return undefined;
  const len = slash < 0 ? String(maxPrefix(family)) : dest.slice(slash + 1);
  const prefix = Number(len);
  if (!isDigits3(len) || prefix > maxPrefix(family)) return undefined;
  // A network written canonically is its own answer: no new string for each
  // of the routes read back (an IPv4 address's text is its dotted quad).
  if (slash >= 0 && family === 4 && ip.text === addr && isNetwork4(ip.bytes, prefix)) return dest;
  return `${networkText(ip.bytes, prefix)}/${len}`;
}

/**
 * The dsfield names iproute2 prints for a route's tos when its
 * /etc/iproute2/rt_dsfield has them (Debian's default file): a pod read on
 * a host with that file shows `CS1` where the guest, without it, shows 0x20.
 */
const DSFIELD_NAMES: ReadonlyMap<string, number> = new Map(
  Object.entries({
    default: 0x00,
    AF11: 0x28,
    AF12: 0x30,
    AF13: 0x38,
    AF21: 0x48,
    AF22: 0x50,
    AF23: 0x58,
    AF31: 0x68,
    AF32: 0x70,
    AF33: 0x78,
    AF41: 0x88,
    AF42: 0x90,
    AF43: 0x98,
    CS1: 0x20,
    CS2: 0x40,
    CS3: 0x60,
    CS4: 0x80,
    CS5: 0xa0,
    CS6: 0xc0,
    CS7: 0xe0,
    EF: 0xb8,
  }),
);

/** A route's tos as `ip -j` prints it (`0x04`, a dsfield name, a number) to 0-255; undefined when unknown. */
export function parseTos(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isInteger(v) && v >= 0 && v <= 255 ? v : undefined;
  if (typeof v !== "string") return undefined;
  const named = DSFIELD_NAMES.get(v);
  if (named !== undefined) return named;
  if (!/^(0x[0-9a-fA-F]{1,2}|\d{1,3})$/.test(v)) return undefined;
  const n = Number(v);
  return n <= 255 ? n : undefined;
}

/** A tos as iproute2 takes it: `0x04`. */
export function formatTos(tos: number): string {
  return `0x${tos.toString(16).padStart(2, "0")}`;
}

/**
 * Route types (rtm_type) by what a route of the type needs: a link
 * (`local`, `broadcast`, `anycast`, `multicast`, and `unicast`, which may
 * have a gateway), or nothing at all (the rest: no link, no gateway).
 */
export const LINKLESS_ROUTE_TYPES: ReadonlySet<string> = new Set([
  "blackhole",
  "unreachable",
  "prohibit",
  "throw",
  "nat",
]);

/** The protocol of a nexthop object made without one. */
export const NEXTHOP_DEFAULT_PROTOCOL = "unspec";
