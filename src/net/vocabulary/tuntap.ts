/**
 * tun and tap devices (`ip tuntap`): what `ip -d -j link` shows of one in
 * linkinfo.info_data, and the `ip tuntap add` words that make one. The
 * kernel fixes all of it when the device is made (TUNSETIFF); none of it
 * changes on an existing device.
 *
 * iproute2 prints the owner and group by name when the reader's
 * /etc/passwd and /etc/group have one (`"user": "root"`), else by number:
 * names are resolved back through the same files (account-ids.ts), so the
 * model always holds numbers.
 */
import { accountId } from "../iproute/account-ids";
import type { Json } from "../parse/json-fields";

/** The character device every tun and tap is made through. */
export const TUN_DEVICE = "/dev/net/tun";

/** rtnl link kind of both tun and tap devices. */
export const TUN_KIND = "tun";

export interface Tuntap {
  mode: "tun" | "tap";
  multiQueue: boolean;
  /** The 4-byte packet information header (IFF_NO_PI clear). */
  pi: boolean;
  vnetHdr: boolean;
  /** Outlives its last file descriptor; what `ip tuntap add` always makes. */
  persist: boolean;
  /** The uid and gid that may attach; absent: none (-1). */
  user?: number;
  group?: number;
}

/** The largest owner or group id: 2^32-1 is the kernel's "none". */
export const MAX_OWNER_ID = 0xfffffffe;

function owner(kind: "user" | "group", v: unknown): number | undefined {
  if (typeof v === "number")
    return Number.isInteger(v) && v >= 0 && v <= MAX_OWNER_ID ? v : undefined;
  return typeof v === "string" ? accountId(kind, v) : undefined;
}

/** The device's settings from an `ip -d -j link` object, when it is a tun or tap. */
export function readTuntap(link: Json): Tuntap | undefined {
  const info = link.linkinfo as Json | undefined;
  if (info?.info_kind !== TUN_KIND) return undefined;
  const data = (info.info_data ?? {}) as Json;
  const mode = data.type === "tap" ? "tap" : data.type === "tun" ? "tun" : undefined;
  if (mode === undefined) return undefined;
  const user = owner("user", data.user);
  const group = owner("group", data.group);
  return {
    mode,
    multiQueue: data.multi_queue === true,
    pi: data.pi === true,
    vnetHdr: data.vnet_hdr === true,
    persist: data.persist === true,
    ...(user === undefined ? {} : { user }),
    ...(group === undefined ? {} : { group }),
  };
}

/** Whether a device made as `b` is `a` (persistence aside: a made one always persists). */
export function sameTuntap(a: Tuntap, b: Tuntap): boolean {
  return (
    a.mode === b.mode &&
    a.multiQueue === b.multiQueue &&
    a.pi === b.pi &&
    a.vnetHdr === b.vnetHdr &&
    a.user === b.user &&
    a.group === b.group
  );
}

/** The words after `tuntap add dev NAME`: mode, flags, owner and group. */
export function tuntapWords(t: Tuntap): (string | number)[] {
  const w: (string | number)[] = ["mode", t.mode];
  if (t.multiQueue) w.push("multi_queue");
  if (t.pi) w.push("pi");
  if (t.vnetHdr) w.push("vnet_hdr");
  if (t.user !== undefined) w.push("user", t.user);
  if (t.group !== undefined) w.push("group", t.group);
  return w;
}

/** What the kernel gives a new device of this mode: the flags, txqueuelen and MTU it starts with. */
export function newDeviceDefaults(mode: Tuntap["mode"]): {
  flags: string[];
  txqueuelen: string;
  mtu: number;
} {
  return mode === "tun"
    ? { flags: ["POINTOPOINT", "MULTICAST", "NOARP"], txqueuelen: "500", mtu: 1500 }
    : { flags: ["BROADCAST", "MULTICAST"], txqueuelen: "1000", mtu: 1500 };
}
