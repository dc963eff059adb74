/**
 * The attributes of an address beyond what identifies it (the address and
 * its prefix length): what `ip address add` takes and `ip -d -j address`
 * shows. In the model (model.ts Address) the ones the planners reason about
 * (peer, scope, noprefixroute and metric: they decide the kernel's prefix
 * route) are typed fields and the rest an attribute list; on the wire every
 * one is an attribute of this table. A list is exact: an attribute left out
 * is not set (the kernel's default: no broadcast, the link's name as label,
 * forever, scope global).
 */
import { type Family, parseIp } from "../model/address";
import { type AttrSpec, attrTable, jsonUint, oneOf, pattern, uint } from "./attrs";
import { parseScope } from "./routes";

/** INFINITY_LIFE_TIME: `forever`. */
export const FOREVER = 4294967295;

function address(family: Family): AttrSpec["grammar"] {
  return {
    test: (v) => {
      const p = parseIp(v);
      return typeof p !== "string" && p.family === family && p.text === v;
    },
    expected: `an IPv${family} address as iproute2 prints it`,
  };
}

const flag = (name: string, family?: Family): AttrSpec => ({
  name,
  read: (json) => (json[name] === true ? "on" : undefined),
  words: () => [name],
  grammar: oneOf(["on"]),
  ...(family ? { family } : {}),
});

function lifetime(name: string, key: string, min: number): AttrSpec {
  return {
    name,
    // forever is the default: left out
    read: (json) => (json[key] === FOREVER ? undefined : jsonUint(json[key])),
    words: (v) => [name, v],
    grammar: uint(min, FOREVER - 1),
    // the kernel counts it down: compared as finite, or 0 (deprecated)
    volatile: true,
  };
}

/** Scopes iproute2 prints by name (rt_scopes); any other is a number. */
const SCOPE_NAMES = ["global", "site", "link", "host", "nowhere"];

export const ADDRESS_ATTRS = attrTable([
  {
    name: "broadcast",
    read: (json) => (typeof json.broadcast === "string" ? json.broadcast : undefined),
    words: (v) => ["broadcast", v],
    grammar: address(4),
    family: 4,
  },
  flag("home", 6),
  {
    name: "label",
    // the link's own name is the default: the parser leaves that out
    read: (json) => (typeof json.label === "string" ? json.label : undefined),
    words: (v) => ["label", v],
    grammar: pattern(/^[A-Za-z0-9_.:@-]{1,15}$/, "a label of 1-15 letters, digits, _ . : @ -"),
    family: 4,
  },
  {
    name: "metric",
    read: (json) => jsonUint(json.metric),
    words: (v) => ["metric", v],
    grammar: uint(0, FOREVER),
    unset: "0",
  },
  flag("mngtmpaddr", 6),
  flag("noprefixroute"),
  {
    name: "peer",
    // IFA_ADDRESS: other than IFA_LOCAL only on a point-to-point address
    read: (json) =>
      typeof json.address === "string" && json.address !== json.local ? json.address : undefined,
    words: (v) => ["peer", v],
    grammar: {
      test: (v) => address(4).test(v) || address(6).test(v),
      expected: "an address as iproute2 prints it",
    },
  },
  // Read only on a link that is down (parse-ip-json.ts): there it decides
  // whether the address is usable, with its local route, or tentative until
  // the link comes up. On a link that is up the agent adds every IPv6
  // address with it and no read carries it.
  flag("nodad", 6),
  lifetime("preferred_lft", "preferred_life_time", 0),
  {
    name: "scope",
    read: (json) => (typeof json.scope === "string" ? json.scope : jsonUint(json.scope)),
    // By number: iproute2 misreads a name after a number (routes.ts protocolWord).
    words: (v) => ["scope", String(parseScope(v))],
    grammar: {
      test: (v) => SCOPE_NAMES.includes(v) || uint(0, 255).test(v),
      expected: `a scope (${SCOPE_NAMES.join(", ")}, or 0-255)`,
    },
    unset: "global",
    family: 4,
  },
  lifetime("valid_lft", "valid_life_time", 1),
]);

/** The rows the model keeps as typed fields of an Address. */
export const TYPED_ADDRESS_ATTRS: readonly string[] = ["metric", "noprefixroute", "peer", "scope"];

/**
 * Keys of an `ip -d -j address` entry that are carried (above, or the
 * address itself) or the kernel's: `secondary` (the kernel's choice of
 * primary), `dynamic` and `deprecated` (a finite valid or a 0 preferred
 * lifetime), `tentative` (DAD under way), `stable-privacy` (the kernel
 * made it from the link's stable_secret, a carried sysctl), `nodad`
 * (carried on a link that is down; on one that is up the agent adds every
 * IPv6 address with it: MIRROR_DIFFERENCES.addressGuestNodad). Any other
 * key is something the address has that is not carried.
 */
export const ADDRESS_JSON_KEYS = new Set([
  "family",
  "local",
  "address",
  "prefixlen",
  "scope",
  "label",
  "broadcast",
  "metric",
  "noprefixroute",
  "home",
  "mngtmpaddr",
  "valid_life_time",
  "preferred_life_time",
  "secondary",
  "dynamic",
  "deprecated",
  "tentative",
  "stable-privacy",
  "nodad",
]);
