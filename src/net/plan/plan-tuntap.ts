/**
 * The tun and tap devices of an Apply's link phase. Pure. A desired
 * device is found by its name: a tun or tap made as wanted is configured
 * like any link; none of that name is made (`tuntap add`, then its MAC for
 * a tap that has one) and stands in the plan as a new link with the
 * kernel's defaults until the read back; a name held by another kind of
 * link, or by a device made otherwise (mode, flags, owner cannot change on
 * an existing device), is a conflict the caller reports, nothing planned.
 */
import type { DesiredLink } from "../model/full-state";
import type { Link } from "../model/model";
import {
  newDeviceDefaults,
  sameTuntap,
  TUN_KIND,
  type Tuntap,
  tuntapWords,
} from "../vocabulary/tuntap";
import { batchLine } from "./render-batch";

export type TuntapFound = { link: Link; lines: string[]; created: boolean } | { conflict: string };

/** The device's settings in words, for messages: `tap multi_queue user 0`. */
function describeTuntap(t: Tuntap): string {
  return tuntapWords(t).slice(1).join(" ");
}

/**
 * The link `want` (which has `tuntap`) is, among `links` as the earlier
 * lines leave them, or the lines that make it. `index` (the desired
 * link's) gives a made one a stand-in ifindex of its own, below 0.
 */
export function findTuntap(
  links: readonly Link[],
  want: DesiredLink & { tuntap: Tuntap },
  index: number,
): TuntapFound {
  const holder = links.find((l) => l.name === want.name);
  if (holder) {
    if (holder.kind !== TUN_KIND || !holder.tuntap)
      return {
        conflict: `is a ${holder.kind || "network"} link in the guest, not a tun/tap device`,
      };
    if (!sameTuntap(holder.tuntap, want.tuntap))
      return {
        conflict: `is a tun/tap device made otherwise in the guest (${describeTuntap(holder.tuntap)}, not ${describeTuntap(want.tuntap)}), which the kernel cannot change`,
      };
    if (want.mac === "" || holder.mac === want.mac)
      return { link: holder, lines: [], created: false };
    const line = batchLine(["link", "set", "dev", holder.name, "address", want.mac]);
    return { link: { ...holder, mac: want.mac }, lines: [line], created: false };
  }
  const d = newDeviceDefaults(want.tuntap.mode);
  const lines = [batchLine(["tuntap", "add", "dev", want.name, ...tuntapWords(want.tuntap)])];
  if (want.mac !== "")
    lines.push(batchLine(["link", "set", "dev", want.name, "address", want.mac]));
  const link: Link = {
    index: -(index + 1),
    name: want.name,
    mac: want.mac,
    mtu: d.mtu,
    flags: d.flags,
    kind: TUN_KIND,
    addresses: [],
    attrs: [
      ["alias", ""],
      ["allmulticast", "off"],
      ["group", "0"],
      ["promisc", "off"],
      ["txqueuelen", d.txqueuelen],
    ],
    tuntap: { ...want.tuntap, persist: true },
  };
  return { link, lines, created: true };
}

/**
 * The restore's first lines: delete the tun and tap devices an Apply made
 * (`created`, by name) that the state before did not have (by ifindex).
 */
export function planTuntapUndo(
  before: readonly Link[],
  now: readonly Link[],
  created: readonly string[],
): string[] {
  const had = new Set(before.map((l) => l.index));
  return now
    .filter((l) => created.includes(l.name) && l.kind === TUN_KIND && !had.has(l.index))
    .map((l) => batchLine(["link", "del", "dev", l.name]));
}
