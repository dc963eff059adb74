/**
 * A desired interface that is a tun or tap device (Interface.tuntap):
 * found by name, so the name is required; a tun has no MAC and a tap may
 * keep the kernel's. At most {@link TUNTAP_LIMIT} per request: each is a
 * device the kernel allocates (queues, a file in /sys) for as long as it
 * exists. Every failure is INVALID_ARGUMENT naming the field and the value.
 */
import type { Interface as WireInterface } from "../../gen/network_pb";
import { MAX_OWNER_ID, type Tuntap } from "../../net/vocabulary/tuntap";
import { invalid, validateMac } from "./validate-fields";

/** tun and tap devices one Apply may name. */
export const TUNTAP_LIMIT = 64;

/** Refuses a request naming more tun/tap devices than {@link TUNTAP_LIMIT}. */
export function boundTuntaps(interfaces: readonly WireInterface[]): void {
  const n = interfaces.filter((i) => i.tuntap !== undefined).length;
  if (n > TUNTAP_LIMIT)
    throw invalid("desired.interfaces", n, `tun/tap devices: at most ${TUNTAP_LIMIT} are accepted`);
}

/** The interface's MAC ("" allowed only for a tap) and its device, checked. */
export function desiredTuntap(f: string, i: WireInterface): { mac: string; tuntap?: Tuntap } {
  const t = i.tuntap;
  if (t === undefined) return { mac: validateMac(`${f}.mac`, i.mac) };
  if (t.mode !== "tun" && t.mode !== "tap")
    throw invalid(`${f}.tuntap.mode`, t.mode, 'is not "tun" or "tap"');
  if (i.name === "")
    throw invalid(`${f}.name`, i.name, "is empty: a tun/tap device is found by its name");
  if (t.mode === "tun" && i.mac !== "")
    throw invalid(`${f}.mac`, i.mac, "is given for a tun device (it has no MAC address)");
  const mac = i.mac === "" ? "" : validateMac(`${f}.mac`, i.mac);
  for (const k of ["user", "group"] as const) {
    const v = t[k];
    if (v !== undefined && v > MAX_OWNER_ID)
      throw invalid(
        `${f}.tuntap.${k}`,
        v,
        `is above ${MAX_OWNER_ID} (2^32-1 means none: leave it out)`,
      );
  }
  return {
    mac,
    tuntap: {
      mode: t.mode,
      multiQueue: t.multiQueue,
      pi: t.pi,
      vnetHdr: t.vnetHdr,
      persist: true,
      ...(t.user === undefined ? {} : { user: t.user }),
      ...(t.group === undefined ? {} : { group: t.group }),
    },
  };
}
