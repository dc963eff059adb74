/**
 * A CNI ADD result (spec 0.3.x, 0.4.0, 1.x: `interfaces`, `ips`, `routes`)
 * into the same requests a namespace read gives. Only interfaces with a
 * `sandbox` (the pod's side) are synced. A result says less than the
 * namespace: no MTU before 1.1, no flags, and routes without a device, so
 * a route goes to the interface whose subnet holds its gateway (else the
 * only interface of its family), and its gateway defaults to that
 * interface's `gateway`, as plugins do. A gateway outside every subnet gets
 * a link-scope host route first, the way ptp makes it reachable in the pod.
 */
import { create } from "@bufbuild/protobuf";
import { InterfaceSchema, type Route, RouteSchema } from "../../gen/types_pb";
import {
  cidrContains,
  type Family,
  maxPrefix,
  networkText,
  parseIp,
} from "../../net/model/address";
import { SCOPE_LINK } from "../../net/vocabulary/routes";
import { addressToProto, protoFamily } from "../../wire/kata-map";
import type { SyncRequests } from "./pod-requests";

/** A result that cannot be used; the message names the field and the value. */
export class CniResultError extends Error {}

type Json = Record<string, unknown>;

interface SandboxIface {
  index: number;
  name: string;
  mac: string;
  mtu: number;
  addrs: { family: Family; address: string; prefix: number; net: string; gateway?: string }[];
}

function bad(field: string, value: unknown, why: string): CniResultError {
  return new CniResultError(`${field}: ${JSON.stringify(value)} ${why}`);
}

function list(doc: Json, key: string): Json[] {
  const v = doc[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => !x || typeof x !== "object" || Array.isArray(x))) {
    throw bad(key, v, "is not a list of objects");
  }
  return v as Json[];
}

function address(field: string, value: unknown, family?: Family) {
  const parsed = typeof value === "string" ? parseIp(value) : "is not a string";
  if (typeof parsed === "string") throw bad(field, value, `is not an IP address (${parsed})`);
  if (family !== undefined && parsed.family !== family) {
    throw bad(field, value, `is IPv${parsed.family}, expected IPv${family}`);
  }
  return parsed;
}

function cidr(field: string, value: unknown) {
  const [addr, len, extra] = typeof value === "string" ? value.split("/") : [];
  if (len === undefined || extra !== undefined)
    throw bad(field, value, "is not a CIDR (a.b.c.d/n)");
  const ip = address(field, addr);
  const prefix = /^\d{1,3}$/.test(len) ? Number(len) : Number.NaN;
  if (!(prefix <= maxPrefix(ip.family))) throw bad(field, value, "has an invalid prefix length");
  return { ip, prefix, net: `${networkText(ip.bytes, prefix)}/${prefix}` };
}

/** Parses result JSON text; throws CniResultError. */
export function requestsFromCniResult(text: string): SyncRequests {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CniResultError(`not JSON: ${(err as Error).message}`);
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new CniResultError("not a CNI result: expected a JSON object");
  }
  const result = doc as Json;
  const version = result.cniVersion;
  if (typeof version !== "string" || !/^(0\.3\.\d+|0\.4\.\d+|1\.\d+\.\d+)$/.test(version)) {
    throw bad(
      "cniVersion",
      version,
      "is not supported (0.3.x, 0.4.0 or 1.x; older results carry no interfaces)",
    );
  }
  const skipped: SyncRequests["skipped"] = [];
  const ifaces = sandboxInterfaces(list(result, "interfaces"), skipped);
  assignIps(list(result, "ips"), ifaces);
  const all = [...ifaces.values()];
  return {
    interfaces: all.map((i) =>
      create(InterfaceSchema, {
        device: i.name,
        name: i.name,
        IPAddresses: i.addrs.map(addressToProto),
        mtu: BigInt(i.mtu),
        hwAddr: i.mac,
      }),
    ),
    routes: routeRequests(list(result, "routes"), all),
    neighbors: [],
    skipped,
  };
}

/** The interfaces with a sandbox, by their index in the result. */
function sandboxInterfaces(
  interfaces: Json[],
  skipped: SyncRequests["skipped"],
): Map<number, SandboxIface> {
  const ifaces = new Map<number, SandboxIface>();
  interfaces.forEach((i, index) => {
    const f = `interfaces[${index}]`;
    if (typeof i.name !== "string" || i.name === "")
      throw bad(`${f}.name`, i.name, "is not a name");
    if (typeof i.sandbox !== "string" || i.sandbox === "") {
      skipped.push({ name: i.name, why: "not in the sandbox (host side)", hostSide: true });
      return;
    }
    if (typeof i.mac !== "string" || !/^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(i.mac)) {
      throw bad(`${f}.mac`, i.mac, "is not a MAC address (xx:xx:xx:xx:xx:xx)");
    }
    const mtu = whole(`${f}.mtu`, i.mtu, 65535);
    ifaces.set(index, { index, name: i.name, mac: i.mac.toLowerCase(), mtu, addrs: [] });
  });
  if (ifaces.size === 0)
    throw new CniResultError("interfaces: no interface with a sandbox: nothing to sync");
  return ifaces;
}

/** Puts each entry of `ips` on its interface (the only one when the index is left out). */
function assignIps(ips: Json[], ifaces: Map<number, SandboxIface>): void {
  ips.forEach((ip, n) => {
    const f = `ips[${n}]`;
    let iface: SandboxIface | undefined;
    if (ip.interface === undefined) {
      if (ifaces.size !== 1)
        throw bad(`${f}.interface`, null, "is missing and there are several sandbox interfaces");
      iface = [...ifaces.values()][0];
    } else {
      iface = typeof ip.interface === "number" ? ifaces.get(ip.interface) : undefined;
      if (!iface)
        throw bad(`${f}.interface`, ip.interface, "is not the index of a sandbox interface");
    }
    const { ip: a, prefix, net } = cidr(`${f}.address`, ip.address);
    if (ip.version !== undefined && ip.version !== String(a.family)) {
      throw bad(`${f}.version`, ip.version, `does not match the IPv${a.family} address`);
    }
    const gateway =
      ip.gateway === undefined ? undefined : address(`${f}.gateway`, ip.gateway, a.family).text;
    (iface as SandboxIface).addrs.push({
      family: a.family,
      address: a.text,
      prefix,
      net,
      ...(gateway ? { gateway } : {}),
    });
  });
}

/** The result's routes placed on interfaces, with host routes to off-subnet gateways first. */
function routeRequests(entries: Json[], all: SandboxIface[]): Route[] {
  const routes: Route[] = [];
  const hostRoutes: Route[] = [];
  entries.forEach((r, n) => {
    const f = `routes[${n}]`;
    const { ip: dst, net, prefix } = cidr(`${f}.dst`, r.dst);
    const gw =
      r.gw === undefined || r.gw === "" ? undefined : address(`${f}.gw`, r.gw, dst.family).text;
    const onLink = (i: SandboxIface, ip: string) =>
      i.addrs.some((a) => a.family === dst.family && cidrContains(a.net, ip));
    const iface =
      (gw === undefined ? undefined : all.find((i) => onLink(i, gw))) ??
      all.find((i) => i.addrs.some((a) => a.family === dst.family));
    if (!iface)
      throw bad(`${f}.dst`, r.dst, `has no sandbox interface with an IPv${dst.family} address`);
    const own = iface.addrs.find((a) => a.family === dst.family);
    const gateway = gw ?? own?.gateway;
    const family = protoFamily(dst.family);
    routes.push(
      create(RouteSchema, {
        dest: prefix === 0 ? "" : net,
        gateway: gateway ?? "",
        device: iface.name,
        scope: whole(`${f}.scope`, r.scope, 255),
        family,
        mtu: whole(`${f}.mtu`, r.mtu, 65535),
      }),
    );
    const hostDest = `${gateway}/${maxPrefix(dst.family)}`;
    if (
      gateway !== undefined &&
      !onLink(iface, gateway) &&
      !hostRoutes.some((h) => h.dest === hostDest && h.device === iface.name)
    ) {
      hostRoutes.push(
        create(RouteSchema, {
          dest: hostDest,
          device: iface.name,
          source: own?.address ?? "",
          scope: SCOPE_LINK,
          family,
        }),
      );
    }
  });
  return [...hostRoutes, ...routes];
}

/** An optional whole number in [0, max]; 0 when absent. */
function whole(field: string, value: unknown, max: number): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > max) {
    throw bad(field, value, `is not a whole number from 0 to ${max}`);
  }
  return value;
}
