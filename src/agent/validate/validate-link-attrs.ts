/**
 * A desired interface's attribute lists (validate-state.ts calls these):
 * the link's (vocabulary/link-attrs.ts) and each address's
 * (vocabulary/address-attrs.ts), by the shared checks of
 * validate-attrs.ts, then what only makes sense together: a peer of the
 * address's family, mngtmpaddr on a /64 (the kernel refuses it on any
 * other), a preferred lifetime no longer than the valid one.
 */
import type { Address as WireAddress, Interface as WireInterface } from "../../gen/network_pb";
import { isLinkLocal6, type ParsedIp, parseIp } from "../../net/model/address";
import { splitAddressAttrs } from "../../net/model/address-attrs";
import type { DesiredAddress } from "../../net/model/full-state";
import { ADDRESS_ATTRS, FOREVER } from "../../net/vocabulary/address-attrs";
import type { Attr } from "../../net/vocabulary/attrs";
import { LINK_ATTRS } from "../../net/vocabulary/link-attrs";
import { attrsFromWire } from "./validate-attrs";
import { invalid } from "./validate-fields";

const SCOPE_BY_NUMBER: Readonly<Record<string, string>> = {
  "0": "global",
  "200": "site",
  "253": "link",
  "254": "host",
  "255": "nowhere",
};

export function linkAttrs(f: string, i: WireInterface): Attr[] | undefined {
  return attrsFromWire(f, i.attrs, LINK_ATTRS);
}

/** The model address of a validated address `p` with prefix `prefix` and its attributes. */
export function desiredAddress(f: string, a: WireAddress, p: ParsedIp): DesiredAddress {
  const list = attrsFromWire(f, a.attrs, ADDRESS_ATTRS, p.family) ?? [];
  const at = (n: string) => list.findIndex(([k]) => k === n);
  const split = splitAddressAttrs(list);
  if (split.peer !== undefined) {
    const peer = parseIp(split.peer);
    if (typeof peer !== "string" && peer.family !== p.family)
      throw invalid(
        `${f}.attrs[${at("peer")}]`,
        split.peer,
        `is IPv${peer.family} for an IPv${p.family} address`,
      );
  }
  if (list.some(([n]) => n === "mngtmpaddr") && a.prefix !== 64)
    throw invalid(`${f}.prefix`, a.prefix, "is not 64: mngtmpaddr needs a /64");
  const life = (n: string) => Number(list.find(([k]) => k === n)?.[1] ?? FOREVER);
  if (life("preferred_lft") > life("valid_lft"))
    throw invalid(
      `${f}.attrs[${at("valid_lft")}]`,
      list[at("valid_lft")]?.[1],
      "is shorter than the preferred lifetime (preferred_lft; forever when left out)",
    );
  // A scope with a name is read back by its name.
  const named =
    split.scope === undefined ? "global" : (SCOPE_BY_NUMBER[split.scope] ?? split.scope);
  const scope = p.family === 4 ? named : isLinkLocal6(p.text) ? "link" : "global";
  return { family: p.family, address: p.text, prefix: a.prefix, ...split, scope };
}
