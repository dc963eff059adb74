/**
 * Pure parsers of `ip -json -details` output into the model: links with
 * their addresses, neighbours (routes: parse-ip-routes.ts). iproute2's JSON
 * shapes stop here. Unknown or malformed entries are skipped, never thrown
 * on, except where the document itself is not JSON.
 */
import { type Family, familyOf } from "../model/address";
import type { Address, Link, Neighbor } from "../model/model";
import { ADDRESS_ATTRS, ADDRESS_JSON_KEYS, TYPED_ADDRESS_ATTRS } from "../vocabulary/address-attrs";
import { readAttrs } from "../vocabulary/attrs";
import { LINK_ATTRS } from "../vocabulary/link-attrs";
import { NEIGHBOR_ATTRS } from "../vocabulary/neighbor-attrs";
import { readTuntap } from "../vocabulary/tuntap";
import { asArray, type Json, str } from "./json-fields";

export { parseAllTableRoutes, parseRoutes } from "./parse-ip-routes";

/** Links with their addresses, from `ip -json -details addr show`. */
export function parseLinks(doc: unknown): Link[] {
  const links: Link[] = [];
  for (const l of asArray(doc)) {
    const name = str(l.ifname);
    if (name === undefined || typeof l.ifindex !== "number") continue;
    const addresses: Address[] = [];
    const up = Array.isArray(l.flags) && l.flags.includes("UP");
    for (const a of asArray(l.addr_info)) {
      const address = parseAddress(a, name, up);
      if (address) addresses.push(address);
    }
    const linkinfo = l.linkinfo as Json | undefined;
    const tuntap = readTuntap(l);
    links.push({
      index: l.ifindex,
      name,
      mac: (str(l.address) ?? "").toLowerCase(),
      mtu: typeof l.mtu === "number" ? l.mtu : 0,
      flags: Array.isArray(l.flags)
        ? l.flags.filter((f): f is string => typeof f === "string")
        : [],
      kind: str(linkinfo?.info_kind) ?? "",
      addresses,
      attrs: readAttrs(LINK_ATTRS, l),
      ...(tuntap ? { tuntap } : {}),
    });
  }
  return links;
}

/**
 * One entry of a link's addr_info; `ifname` is the label the kernel gives
 * by default; `up`: the link is up (nodad is carried only on one that is
 * not: address-attrs.ts).
 */
function parseAddress(a: Json, ifname: string, up: boolean): Address | undefined {
  const local = str(a.local);
  if (local === undefined || typeof a.prefixlen !== "number") return undefined;
  const family: Family = a.family === "inet6" ? 6 : 4;
  const attrs = readAttrs(ADDRESS_ATTRS, a).filter(
    ([n, v]) =>
      !TYPED_ADDRESS_ATTRS.includes(n) &&
      !(n === "label" && v === ifname) &&
      !(n === "nodad" && up) &&
      (ADDRESS_ATTRS.get(n)?.family ?? family) === family,
  );
  const other = Object.keys(a)
    .filter((k) => !ADDRESS_JSON_KEYS.has(k))
    .map((k) => `${k}=${JSON.stringify(a[k])}`);
  return {
    family,
    address: local,
    prefix: a.prefixlen,
    scope: str(a.scope) ?? (typeof a.scope === "number" ? String(a.scope) : "global"),
    ...(a.noprefixroute === true ? { noprefixroute: true } : {}),
    // IFA_ADDRESS differs from IFA_LOCAL only on a point-to-point address.
    ...(typeof a.address === "string" && a.address !== local ? { peer: a.address } : {}),
    ...(a.secondary === true ? { secondary: true } : {}),
    ...(typeof a.metric === "number" ? { metric: a.metric } : {}),
    ...(attrs.length ? { attrs } : {}),
    ...(other.length ? { other } : {}),
  };
}

/**
 * Neighbours from `ip -json neigh show`, or proxy entries from `ip -json
 * neigh show proxy` (`proxy`: each gets the proxy attribute).
 */
export function parseNeighbors(doc: unknown): Neighbor[] {
  const out: Neighbor[] = [];
  for (const n of asArray(doc)) {
    const dst = str(n.dst);
    const dev = str(n.dev);
    if (dst === undefined || dev === undefined) continue;
    const attrs = readAttrs(NEIGHBOR_ATTRS, n);
    out.push({
      family: familyOf(dst),
      ip: dst,
      dev,
      lladdr: (str(n.lladdr) ?? "").toLowerCase(),
      state: Array.isArray(n.state)
        ? n.state.filter((s): s is string => typeof s === "string")
        : [],
      router: "router" in n,
      ...(attrs.length ? { attrs } : {}),
    });
  }
  return out;
}
