/**
 * The attributes of a neighbour entry beyond its address, device, MAC and
 * `router` (model.ts Neighbor): `proxy`, which makes it a proxy entry
 * (`ip neigh add proxy IP dev D`: the kernel answers ARP/NDP for IP on D;
 * no MAC, no state), and `extern_learn` (NTF_EXT_LEARNED: the kernel's
 * garbage collection leaves it alone). A list is exact: left out is off.
 */
import { attrTable, flagAttr } from "./attrs";

export const NEIGHBOR_ATTRS = attrTable([flagAttr("extern_learn"), flagAttr("proxy")]);

/** Whether an entry is a proxy entry. */
export function isProxy(n: { attrs?: readonly (readonly [string, string])[] }): boolean {
  return n.attrs?.some(([k]) => k === "proxy") === true;
}
