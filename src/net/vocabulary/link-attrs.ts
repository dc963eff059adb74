/**
 * The attributes of a link beyond its typed fields (model.ts Link: name,
 * MAC, MTU, flags UP/NOARP): what `ip link set` sets and `ip -d -j link`
 * shows, among them what the CNI tuning plugin sets (promisc, allmulti,
 * txQLen), and every other flag `ip link set` changes (multicast, dynamic,
 * trailers). `carrier` and `protodown` are not rows: a veth and a
 * virtio-net NIC refuse both (carrier is the wire's, see the carrier
 * entries of what legitimately differs). A link's list is read whole (every row has a value: txqueuelen
 * 0 is a value, not "unset"), and in a request an attribute left out keeps
 * the link's value, as a name of "" and an MTU of 0 do: a client that does
 * not know a row never resets it.
 */
import { type AttrSpec, attrTable, jsonUint, oneOf, uint } from "./attrs";

const U32 = 0xffffffff;

/**
 * An IFF_* flag the user sets (`promisc on`), read from the flags list, not
 * the counters; `inverted`: the flag says "off" (`trailers off` sets
 * NOTRAILERS).
 */
function userFlag(name: string, flag: string, inverted = false): AttrSpec {
  return {
    name,
    read: (json) =>
      Array.isArray(json.flags)
        ? json.flags.includes(flag) !== inverted
          ? "on"
          : "off"
        : undefined,
    words: (v) => [name, v],
    grammar: oneOf(["on", "off"]),
  };
}

/**
 * An alias (IFLA_IFALIAS, at most 255 bytes): printable ASCII without the
 * quotes, backslash and `#` that `ip -batch` would read as syntax; written
 * in double quotes (render-batch.ts checks the quoted token again).
 */
const ALIAS_TEXT = /^[\x20-\x7e]*$/;
const ALIAS_REFUSED = /["'#\\]/;

export const LINK_ATTRS = attrTable([
  {
    name: "alias",
    read: (json) =>
      json.ifalias === undefined ? "" : typeof json.ifalias === "string" ? json.ifalias : undefined,
    words: (v) => ["alias", `"${v}"`],
    grammar: {
      test: (v) => ALIAS_TEXT.test(v) && !ALIAS_REFUSED.test(v) && v.length <= 255,
      expected: "printable ASCII without \" ' # \\, at most 255 bytes",
    },
  },
  userFlag("allmulticast", "ALLMULTI"),
  userFlag("dynamic", "DYNAMIC"),
  {
    name: "group",
    // "default" is group 0; a name from the host's /etc/iproute2/group is not carried.
    read: (json) => (json.group === "default" ? "0" : jsonUint(json.group)),
    words: (v) => ["group", v],
    grammar: uint(0, U32),
  },
  userFlag("multicast", "MULTICAST"),
  userFlag("promisc", "PROMISC"),
  userFlag("trailers", "NOTRAILERS", true),
  {
    name: "txqueuelen",
    // `ip -j` leaves txqlen out when it is 0 (a veth's).
    read: (json) => (json.txqlen === undefined ? "0" : jsonUint(json.txqlen)),
    words: (v) => ["txqueuelen", v],
    grammar: uint(0, U32),
  },
]);
