/**
 * The attributes of a policy rule beyond its typed fields (rules.ts:
 * family, priority, not, from/to, iif/oif, fwmark, action, table): the
 * selectors and actions `ip rule` has grown (ipproto, ports, uidrange,
 * tos, goto, nop, l3mdev, suppress_*, realms) and who made it (protocol).
 * One row each: how `ip -d -j rule` shows it, the words that write it back,
 * its grammar. Values are canonical: numbers, never names a host's
 * /etc/protocols or /etc/iproute2 may give and a guest may not know.
 */
import { type AttrSpec, attrTable, flagAttr, jsonUint, pattern, uint } from "./attrs";
import { isRouteProtocol } from "./routes";

type Json = Record<string, unknown>;

/**
 * IP protocol numbers by the names netbase's /etc/protocols gives them (what
 * iproute2 prints). A Map: an inherited property (`toString`) is no name.
 */
const IP_PROTOCOLS: ReadonlyMap<string, number> = new Map(
  Object.entries({
    ip: 0,
    hopopt: 0,
    icmp: 1,
    igmp: 2,
    ggp: 3,
    ipencap: 4,
    st: 5,
    tcp: 6,
    egp: 8,
    igp: 9,
    pup: 12,
    udp: 17,
    hmp: 20,
    "xns-idp": 22,
    rdp: 27,
    "iso-tp4": 29,
    dccp: 33,
    xtp: 36,
    ddp: 37,
    "idpr-cmtp": 38,
    ipv6: 41,
    "ipv6-route": 43,
    "ipv6-frag": 44,
    idrp: 45,
    rsvp: 46,
    gre: 47,
    esp: 50,
    ah: 51,
    skip: 57,
    "ipv6-icmp": 58,
    "ipv6-nonxt": 59,
    "ipv6-opts": 60,
    rspf: 73,
    vmtp: 81,
    eigrp: 88,
    ospf: 89,
    "ax.25": 93,
    ipip: 94,
    etherip: 97,
    encap: 98,
    pim: 103,
    ipcomp: 108,
    vrrp: 112,
    l2tp: 115,
    isis: 124,
    sctp: 132,
    fc: 133,
    "mobility-header": 135,
    udplite: 136,
    "mpls-in-ip": 137,
    manet: 138,
    hip: 139,
    shim6: 140,
    wesp: 141,
    rohc: 142,
    ethernet: 143,
  }),
);

function ipproto(json: Json): string | undefined {
  const v = json.ipproto;
  const named = typeof v === "string" ? IP_PROTOCOLS.get(v) : undefined;
  if (named !== undefined) return String(named);
  return jsonUint(v);
}

/** `N` or `N-M` from `KEY` or `KEY_start`/`KEY_end` (ports, uids); a range of one is `N`. */
function range(key: string, json: Json): string | undefined {
  if (key in json) return jsonUint(json[key]);
  const start = jsonUint(json[`${key}_start`]);
  const end = jsonUint(json[`${key}_end`]);
  if (start === undefined || end === undefined) return undefined;
  return start === end ? start : `${start}-${end}`;
}

/** `N` or `N-M`, N <= M, both in [0, max]. */
function rangeGrammar(max: number, what: string): AttrSpec["grammar"] {
  const n = uint(0, max);
  return {
    test: (v) => {
      const [a = "", b, extra] = v.split("-");
      if (extra !== undefined || !n.test(a)) return false;
      return b === undefined || (n.test(b) && Number(a) <= Number(b));
    },
    expected: `${what} N or N-M (0-${max}, N <= M)`,
  };
}

const REALM = "(0|[1-9]\\d{0,2})";

function realms(json: Json): string | undefined {
  if (!("flow_to" in json) && !("flow_from" in json)) return undefined;
  const from = json.flow_from === undefined ? "0" : jsonUint(json.flow_from);
  const to = json.flow_to === undefined ? "0" : jsonUint(json.flow_to);
  // A realm named from the host's rt_realms is not carried (undefined: not read).
  if (from === undefined || to === undefined) return undefined;
  return from === "0" ? to : `${from}/${to}`;
}

const U32 = 0xffffffff;

export const RULE_ATTRS = attrTable([
  {
    name: "dport",
    read: (json) => range("dport", json),
    words: (v) => ["dport", v],
    grammar: rangeGrammar(65535, "a port or range"),
  },
  {
    name: "goto",
    read: (json) => jsonUint(json.goto),
    words: (v) => ["goto", v],
    grammar: uint(1, U32),
  },
  {
    name: "ipproto",
    read: ipproto,
    words: (v) => ["ipproto", v],
    grammar: uint(0, 255),
  },
  flagAttr("l3mdev"),
  flagAttr("nop"),
  {
    name: "protocol",
    read: (json) => (typeof json.protocol === "string" ? json.protocol : jsonUint(json.protocol)),
    words: (v) => ["protocol", v],
    grammar: {
      test: (v) => v === "unspec" || isRouteProtocol(v),
      expected: "a protocol iproute2 knows by name, or 0-255",
    },
    unset: "unspec",
  },
  {
    name: "realms",
    read: realms,
    words: (v) => ["realms", v],
    grammar: pattern(new RegExp(`^(${REALM}/)?${REALM}$`), "a realm or FROM/TO (0-255 each)"),
    unset: "0",
  },
  {
    name: "sport",
    read: (json) => range("sport", json),
    words: (v) => ["sport", v],
    grammar: rangeGrammar(65535, "a port or range"),
  },
  {
    name: "suppress_ifgroup",
    read: (json) => jsonUint(json.suppress_ifgroup),
    words: (v) => ["suppress_ifgroup", v],
    grammar: uint(0, 0x7fffffff),
  },
  {
    name: "suppress_prefixlength",
    read: (json) => jsonUint(json.suppress_prefixlen),
    words: (v) => ["suppress_prefixlength", v],
    grammar: uint(0, 128),
  },
  {
    name: "tos",
    read: (json) => (typeof json.tos === "string" ? json.tos : undefined),
    words: (v) => ["tos", v],
    grammar: pattern(/^0x[0-9a-f]{2}$/, "a TOS as iproute2 prints it (0x00-0xff)"),
    unset: "0x00",
  },
  {
    name: "uidrange",
    read: (json) => range("uid", json),
    words: (v) => ["uidrange", v],
    grammar: rangeGrammar(U32, "a uid or range"),
  },
]);

/** The attributes that are the rule's action: a rule with one has no table. */
export const RULE_ACTION_ATTRS: readonly string[] = ["goto", "l3mdev", "nop"];

/** The keys of an `ip -d -j rule` object each attribute is read from. */
export const RULE_ATTR_KEYS: Readonly<Record<string, readonly string[]>> = {
  dport: ["dport", "dport_start", "dport_end"],
  goto: ["goto"],
  ipproto: ["ipproto"],
  l3mdev: ["l3mdev"],
  nop: ["nop"],
  protocol: ["protocol"],
  realms: ["flow_from", "flow_to"],
  sport: ["sport", "sport_start", "sport_end"],
  suppress_ifgroup: ["suppress_ifgroup"],
  suppress_prefixlength: ["suppress_prefixlen"],
  tos: ["tos"],
  uidrange: ["uid_start", "uid_end"],
};

/**
 * The keys of an `ip -d -j rule` object that the model carries (typed or
 * as attributes), or that are the kernel's state rather than the rule's:
 * `iif_detached`/`oif_detached` (no such device here: the rule is kept and
 * matches once one comes), `unresolved` (a goto whose target priority has
 * no rule yet). Any other key is something the rule has that is not carried.
 */
export const RULE_JSON_KEYS = new Set([
  "priority",
  "src",
  "srclen",
  "dst",
  "dstlen",
  "not",
  "fwmark",
  "fwmask",
  "iif",
  "oif",
  "table",
  "action",
  "iif_detached",
  "oif_detached",
  "unresolved",
  ...Object.values(RULE_ATTR_KEYS).flat(),
]);
