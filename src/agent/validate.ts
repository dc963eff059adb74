/**
 * Request validation: protobuf messages in, model values out. Runs before
 * anything changes. Every failure is INVALID_ARGUMENT naming the field and
 * the value, e.g. `routes[2].gateway: "1.2.3" is not an IP address`.
 */
import * as v from "valibot";
import type { ARPNeighbor, Interface, Route as ProtoRoute } from "../gen/types_pb";
import { IPFamily } from "../gen/types_pb";
import {
  defaultDst,
  type Family,
  maxPrefix,
  networkText,
  type ParsedIp,
  parseIp,
  parsePrefix,
} from "../net/ip";
import {
  IFF_NOARP,
  isManagedLink,
  NTF_EXT_LEARNED,
  NTF_ROUTER,
  NUD,
  RTNH_F_ONLINK,
} from "../net/kernel-facts";
import { type Route, routeKey } from "../net/model";
import { Code, TtrpcError } from "../ttrpc/codes";
import { quote } from "../ttrpc/quote";

/**
 * INVALID_ARGUMENT naming the field and the value, the value quoted short
 * (a long one cut, with its length): the message's size is bounded.
 */
export function invalid(field: string, value: unknown, why: string): TtrpcError {
  return new TtrpcError(`${field}: ${quote(value)} ${why}`, Code.INVALID_ARGUMENT);
}

/** Link names iproute2 and the kernel both take, and nothing that could read as an option. */
const NameSchema = v.pipe(
  v.string(),
  v.minLength(1, "is empty"),
  v.maxLength(15, "is longer than 15 bytes"),
  v.regex(
    /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/,
    "is not a valid interface name (letters, digits, '_', '.', '-'; not starting with '-' or '.')",
  ),
);

const MacSchema = v.pipe(
  v.string(),
  v.regex(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/, "is not a MAC address (xx:xx:xx:xx:xx:xx)"),
);

const MtuSchema = v.pipe(
  v.number(),
  v.integer(),
  v.minValue(68, "is below 68"),
  v.maxValue(65535, "is above 65535"),
);

function check<T>(schema: v.GenericSchema<unknown, T>, field: string, value: unknown): T {
  const r = v.safeParse(schema, value);
  if (!r.success) throw invalid(field, value, r.issues[0].message);
  return r.output;
}

export function validateName(field: string, value: string): string {
  return check(NameSchema, field, value);
}

export function validateMac(field: string, value: string): string {
  const mac = check(MacSchema, field, value).toLowerCase();
  if (mac === "00:00:00:00:00:00") throw invalid(field, value, "is the loopback's address");
  return mac;
}

function ip(field: string, value: string, family?: Family): ParsedIp {
  const parsed = parseIp(value);
  if (typeof parsed === "string") throw invalid(field, value, `is not a valid address: ${parsed}`);
  if (family !== undefined && parsed.family !== family) {
    throw invalid(field, value, `is IPv${parsed.family} in an IPv${family} entry`);
  }
  return parsed;
}

function protoFamily(field: string, value: number): Family {
  if (value === IPFamily.v4) return 4;
  if (value === IPFamily.v6) return 6;
  throw invalid(field, value, "is not a family (0 = v4, 1 = v6)");
}

/**
 * The family of an entry: from its addresses when it has any (the field
 * defaults to v4, so an old runtime's IPv6 routes arrive as "v4"); an
 * explicit v6 with IPv4 addresses is an error.
 */
function resolveFamily(field: string, declared: number, addresses: string[]): Family {
  const fam = protoFamily(`${field}.family`, declared);
  const seen = addresses.filter(Boolean).map((a) => (a.includes(":") ? 6 : 4));
  const first = seen[0];
  if (first === undefined) return fam;
  if (fam === 6 && first === 4)
    throw invalid(`${field}.family`, "v6", "does not match its IPv4 addresses");
  return first;
}

const ROUTE_STATE_FLAGS = 0x1 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80; // dead, offload, linkdown, ... (kernel-set)

/** Validates UpdateRoutes' list into model routes (deduplicated, checked for clashes). */
export function validateRoutes(routes: readonly ProtoRoute[]): Route[] {
  const out: Route[] = [];
  const byKey = new Map<string, { index: number; route: Route }>();
  // Tables name a handful of links thousands of times: check each name once.
  const validNames = new Set<string>();
  routes.forEach((r, i) => {
    const f = `routes[${i}]`;
    if (r.device === "")
      throw invalid(`${f}.device`, r.device, "is empty: every route needs a link");
    if (!validNames.has(r.device)) {
      validateName(`${f}.device`, r.device);
      validNames.add(r.device);
    }
    if (!isManagedLink(r.device))
      throw invalid(`${f}.device`, r.device, "is not managed (loopback)");
    const srcText = r.source.includes("/") ? (r.source.split("/")[0] as string) : r.source;
    const family = resolveFamily(f, r.family, [r.dest.split("/")[0] as string, r.gateway, srcText]);

    let dst = defaultDst(family);
    if (r.dest !== "") {
      const [addr = "", len, extra] = r.dest.split("/");
      if (extra !== undefined) throw invalid(`${f}.dest`, r.dest, "is not a CIDR");
      const a = ip(`${f}.dest`, addr, family);
      const prefix = len === undefined ? maxPrefix(family) : parsePrefix(len, family);
      if (typeof prefix === "string") throw invalid(`${f}.dest`, r.dest, prefix);
      // Host bits are cleared, as `ip route` does (the Kata agent fails with EINVAL, #5207).
      dst = `${networkText(a.bytes, prefix)}/${prefix}`;
    }
    const gw = r.gateway ? ip(`${f}.gateway`, r.gateway, family) : undefined;
    // `via 0.0.0.0` (or `::`) makes a route without a gateway; said so here,
    // the plan matches what the kernel reads back instead of redoing it.
    const gateway = gw?.bytes.some((b) => b !== 0) ? gw.text : undefined;
    let prefsrc: string | undefined;
    if (r.source) {
      const [addr = "", len] = r.source.split("/");
      prefsrc = ip(`${f}.source`, addr, family).text;
      if (len !== undefined && len !== String(maxPrefix(family))) {
        throw invalid(
          `${f}.source`,
          r.source,
          "is a source prefix; only a preferred source address is supported",
        );
      }
    }
    if (r.scope > 255) throw invalid(`${f}.scope`, r.scope, "is not a scope (0-255)");
    if (r.flags > 0xff || (r.flags & ~(RTNH_F_ONLINK | ROUTE_STATE_FLAGS)) !== 0) {
      throw invalid(`${f}.flags`, r.flags, "has unsupported bits (only onlink = 4 is applied)");
    }
    if (r.mtu !== 0) check(MtuSchema, `${f}.mtu`, r.mtu);
    const route: Route = {
      family,
      dst,
      ...(gateway ? { gateway } : {}),
      dev: r.device,
      ...(prefsrc ? { prefsrc } : {}),
      // IPv6 routes have no scope: the kernel keeps universe whatever is
      // asked, and a 253 kept here would never match the table read back.
      scope: family === 4 ? r.scope : 0,
      metric: family === 4 ? 0 : 1024,
      onlink: (r.flags & RTNH_F_ONLINK) !== 0,
      mtu: r.mtu,
      protocol: "boot",
      type: "unicast",
    };
    // Two links may each hold a route to the same destination (the kernel
    // makes fe80::/64 on every link); on one link a key holds one route.
    const key = `${routeKey(route)} ${route.dev}`;
    const twin = byKey.get(key);
    if (twin) {
      if (JSON.stringify(twin.route) === JSON.stringify(route)) return; // exact duplicate: once is enough
      throw invalid(
        `${f}.dest`,
        r.dest || dst,
        `clashes with routes[${twin.index}]: same destination, metric and device, different route`,
      );
    }
    byKey.set(key, { index: i, route });
    out.push(route);
  });
  return out;
}

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
    if (iface.name === "lo")
      throw invalid("interface.name", iface.name, "is reserved for the loopback");
  }
  if (iface.mtu > 65535n) throw invalid("interface.mtu", iface.mtu.toString(), "is above 65535");
  const mtu = Number(iface.mtu);
  if (mtu !== 0) check(MtuSchema, "interface.mtu", mtu);
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
  return {
    mac,
    name: iface.name,
    mtu,
    noarp: (iface.rawFlags & IFF_NOARP) !== 0,
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
