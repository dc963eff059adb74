/**
 * The policy for every pod of a CNI network, before any exists, from its
 * network configuration list: the interface plugin's IPAM ranges
 * (`ipam.ranges`, or the older `ipam.subnet`) give the address prefixes,
 * the subnet routes, the gateways and the neighbours; `ipam.routes` the
 * other destinations; `mtu` the MTU; the `sbr` plugin rules in their
 * tables; the `tuning` plugin its sysctls. MACs and names are left open
 * (each pod's are its own). IPv6 link-local addresses, routes and gateways
 * (fe80::/64) are admitted: every pod's link has them. Pure.
 */

import { parseCidr } from "../../agent/policy/prefixes";
import type { Policy } from "../../agent/policy/schema";

export class CniConfigError extends Error {
  override readonly name = "CniConfigError";
}

type Json = Record<string, unknown>;

const LINK_LOCAL6 = "fe80::/64";
/** Tables the sbr plugin uses: 100 upwards, one per interface. */
const SBR_TABLES = [100, 101, 102, 103];

const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function cidr(field: string, value: unknown): string {
  const net = typeof value === "string" ? parseCidr(value) : undefined;
  if (net === undefined)
    throw new CniConfigError(`${field}: ${JSON.stringify(value)} is not a CIDR`);
  return net.text;
}

/** The subnets and gateways of an ipam section. */
function ipamRanges(ipam: Json, f: string): { subnet: string; gateway?: string }[] {
  const out: { subnet: string; gateway?: string }[] = [];
  if (Array.isArray(ipam.ranges)) {
    ipam.ranges.forEach((set, i) => {
      if (!Array.isArray(set)) throw new CniConfigError(`${f}.ranges[${i}]: not a list of ranges`);
      set.forEach((r, k) => {
        if (!isObject(r)) throw new CniConfigError(`${f}.ranges[${i}][${k}]: not an object`);
        out.push({
          subnet: cidr(`${f}.ranges[${i}][${k}].subnet`, r.subnet),
          ...(typeof r.gateway === "string" ? { gateway: r.gateway } : {}),
        });
      });
    });
  } else if (ipam.subnet !== undefined) {
    out.push({
      subnet: cidr(`${f}.subnet`, ipam.subnet),
      ...(typeof ipam.gateway === "string" ? { gateway: ipam.gateway } : {}),
    });
  }
  return out;
}

/** The policy for the pods of the network configuration list `text`; throws CniConfigError. */
export function policyForCniConfig(text: string): Policy {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CniConfigError(`not JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc))
    throw new CniConfigError("not a CNI network configuration: expected an object");
  const plugins = Array.isArray(doc.plugins) ? doc.plugins : [doc];
  if (!plugins.every(isObject)) throw new CniConfigError("plugins: every entry must be an object");
  const first = plugins[0] as Json;
  const ipam = isObject(first.ipam) ? first.ipam : {};
  const f = Array.isArray(doc.plugins) ? "plugins[0].ipam" : "ipam";
  const ranges = ipamRanges(ipam, f);
  const subnets = ranges.map((r) => r.subnet);
  const v4 = subnets.filter((s) => !s.includes(":"));
  const v6 = [...subnets.filter((s) => s.includes(":")), LINK_LOCAL6];
  const routeDsts = (Array.isArray(ipam.routes) ? ipam.routes : []).map((r, i) =>
    cidr(`${f}.routes[${i}].dst`, isObject(r) ? r.dst : undefined),
  );
  const routeGws = (Array.isArray(ipam.routes) ? ipam.routes : [])
    .map((r) => (isObject(r) && typeof r.gw === "string" ? r.gw : undefined))
    .filter((g): g is string => g !== undefined);
  const mtu =
    typeof first.mtu === "number" ? { min: first.mtu, max: first.mtu } : { min: 1280, max: 9000 };
  const sbr = plugins.some((p) => (p as Json).type === "sbr");
  const sysctls: Policy["sysctls"] = {};
  for (const p of plugins as Json[]) {
    if (p.type !== "tuning" || !isObject(p.sysctl)) continue;
    for (const [k, v] of Object.entries(p.sysctl)) if (typeof v === "string") sysctls[k] = [v];
  }
  return {
    netagentPolicy: 1,
    interfaces: { macs: "any", names: "any", max: 1, mtu, flags: ["down"] },
    addresses: {
      ipv4: { exact: [], within: v4 },
      ipv6: { exact: [], within: v6 },
      perInterface: ranges.length + 1,
    },
    routes: {
      destinations: {
        exact: [...new Set([...routeDsts, ...subnets, LINK_LOCAL6])],
        within: subnets,
      },
      gateways: [
        ...subnets,
        LINK_LOCAL6,
        ...ranges.flatMap((r) =>
          r.gateway ? [`${r.gateway}/${r.gateway.includes(":") ? 128 : 32}`] : [],
        ),
        ...routeGws.map((g) => `${g}/${g.includes(":") ? 128 : 32}`),
      ],
      tables: sbr ? [254, ...SBR_TABLES] : [254],
      types: ["unicast"],
      scopes: ["universe", "link", "host"],
    },
    rules: { allowed: sbr, tables: sbr ? SBR_TABLES : [] },
    neighbours: {
      ips: [...subnets, LINK_LOCAL6],
      lladdrs: "any",
      states: ["permanent"],
      flags: ["router"],
    },
    sysctls,
    packetFilter: false,
    reads: true,
    tuntap: { names: [] },
    phases: { initial: "setup", settleMs: 10_000, running: [] },
  };
}
