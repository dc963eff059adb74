/**
 * Request validation: protobuf messages in, model values out. Runs before
 * anything changes. Every failure is INVALID_ARGUMENT naming the field and
 * the value, e.g. `routes[2].gateway: "1.2.3" is not an IP address`.
 */
import type { ARPNeighbor, Interface } from "../../gen/types_pb";
import { type Family, type ParsedIp, parsePrefix } from "../../net/model/address";
import { IFF, isManagedLink, NTF_EXT_LEARNED, NTF_ROUTER, NUD } from "../../net/vocabulary/links";
import { Code, TtrpcError } from "../../ttrpc/codes";
import {
  invalid,
  validIp as ip,
  mtuForIpv6,
  resolveFamily,
  validateMac,
  validateMtu,
  validateName,
} from "./validate-fields";

export interface InterfaceSpec {
  mac: string;
  /** "" keeps the current name. */
  name: string;
  /** 0 keeps the current MTU. */
  mtu: number;
  noarp: boolean;
  addresses: { family: Family; address: string; prefix: number }[];
  devicePath: string;
}

export function validateInterface(iface: Interface | undefined): InterfaceSpec {
  if (iface === undefined) throw new TtrpcError("interface: missing", Code.INVALID_ARGUMENT);
  const mac = validateMac("interface.hwAddr", iface.hwAddr);
  if (iface.name !== "") {
    validateName("interface.name", iface.name);
    if (!isManagedLink(iface.name))
      throw invalid("interface.name", iface.name, "is reserved for the loopback");
  }
  if (iface.mtu > 65535n) throw invalid("interface.mtu", iface.mtu.toString(), "is above 65535");
  const mtu = Number(iface.mtu);
  if (mtu !== 0) validateMtu("interface.mtu", mtu);
  if (iface.devicePath.length > 256 || hasControlChar(iface.devicePath)) {
    throw invalid("interface.devicePath", iface.devicePath, "is not a device path");
  }
  const seen = new Set<string>();
  const addresses: InterfaceSpec["addresses"] = [];
  iface.IPAddresses.forEach((a, i) => {
    const f = `interface.IPAddresses[${i}]`;
    const family = resolveFamily(f, a.family, [a.address]);
    const parsed = ip(`${f}.address`, a.address, family);
    if (a.mask === "") throw invalid(`${f}.mask`, a.mask, "is empty: give the prefix length");
    const prefix = parsePrefix(a.mask, family);
    if (typeof prefix === "string") throw invalid(`${f}.mask`, a.mask, prefix);
    const unusable = unusableAddress(parsed);
    if (unusable) throw invalid(`${f}.address`, a.address, unusable);
    const key = parsed.text;
    if (seen.has(key)) throw invalid(`${f}.address`, a.address, "is listed twice");
    seen.add(key);
    addresses.push({ family, address: parsed.text, prefix });
  });
  const v6 = addresses.findIndex((a) => a.family === 6);
  const ipv6 = addresses[v6];
  mtuForIpv6(
    "interface.mtu",
    mtu,
    ipv6 && {
      field: `interface.IPAddresses[${v6}].address`,
      address: ipv6.address,
    },
  );
  return {
    mac,
    name: iface.name,
    mtu,
    noarp: (iface.rawFlags & IFF.NOARP) !== 0,
    addresses,
    devicePath: iface.devicePath,
  };
}

export interface NeighborSpec {
  ip: string;
  family: Family;
  dev: string;
  lladdr: string;
  nud: string;
  router: boolean;
  externLearned: boolean;
}

/** A single NUD bit to the name `ip neigh` takes. */
const NUD_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(NUD).map(([name, bit]) => [bit, name.toLowerCase()]),
);

/** Validates neighbours; multicast entries are dropped (they are the kernel's business). */
export function validateNeighbors(neighbors: readonly ARPNeighbor[]): {
  specs: NeighborSpec[];
  skipped: string[];
} {
  const specs: NeighborSpec[] = [];
  const skipped: string[] = [];
  neighbors.forEach((n, i) => {
    const f = `neighbors[${i}]`;
    if (n.toIPAddress === undefined) throw invalid(`${f}.toIPAddress`, null, "is missing");
    const family = resolveFamily(`${f}.toIPAddress`, n.toIPAddress.family, [n.toIPAddress.address]);
    const addr = ip(`${f}.toIPAddress.address`, n.toIPAddress.address, family);
    validateName(`${f}.device`, n.device);
    if (!isManagedLink(n.device))
      throw invalid(`${f}.device`, n.device, "is not managed (loopback)");
    const lladdr = n.lladdr === "" ? "" : validateMac(`${f}.lladdr`, n.lladdr);
    const nud = n.state === 0 ? "permanent" : NUD_NAMES[n.state];
    if (nud === undefined) throw invalid(`${f}.state`, n.state, "is not a single NUD state");
    if (lladdr === "" && (nud === "permanent" || nud === "noarp" || nud === "reachable")) {
      throw invalid(`${f}.lladdr`, n.lladdr, `is empty for a ${nud} entry`);
    }
    if ((n.flags & ~(NTF_ROUTER | NTF_EXT_LEARNED)) !== 0) {
      throw invalid(
        `${f}.flags`,
        n.flags,
        "has unsupported bits (router = 128, extern_learn = 16)",
      );
    }
    const first = addr.bytes[0] as number;
    if ((family === 4 && first >= 224 && first <= 239) || (family === 6 && first === 0xff)) {
      skipped.push(addr.text);
      return;
    }
    specs.push({
      ip: addr.text,
      family,
      dev: n.device,
      lladdr,
      nud,
      router: (n.flags & NTF_ROUTER) !== 0,
      externLearned: (n.flags & NTF_EXT_LEARNED) !== 0,
    });
  });
  return { specs, skipped };
}

function hasControlChar(s: string): boolean {
  for (let i = 0; i < s.length; i++)
    if (s.charCodeAt(i) < 0x20 || s.charCodeAt(i) === 0x7f) return true;
  return false;
}

/** Why an address cannot be given to an interface, or undefined when it can. */
function unusableAddress(a: ParsedIp): string | undefined {
  const b0 = a.bytes[0] ?? 0;
  if (a.bytes.every((b) => b === 0)) return "is the unspecified address";
  if (a.family === 4) {
    if (b0 >= 224) return "is a multicast or reserved address";
    if (b0 === 127) return "is a loopback address";
  } else {
    if (b0 === 0xff) return "is a multicast address";
    if (a.text === "::1") return "is the loopback address";
  }
  return undefined;
}
