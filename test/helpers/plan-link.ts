/**
 * Links, addresses and link targets for the tests of planLink and
 * impliedKernelRoutes (net-plan-link*.test.ts, net-kernel-routes.test.ts).
 */

import type { Address, Link } from "../../src/net/model/model";
import type { LinkTarget } from "../../src/net/plan/plan-link";

export const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];
export const DOWN = ["BROADCAST", "MULTICAST"];

export function link(index: number, name: string, over: Partial<Link> = {}): Link {
  return {
    index,
    name,
    mac: `02:00:00:00:00:${index.toString(16).padStart(2, "0")}`,
    mtu: 1500,
    flags: UP,
    kind: "veth",
    addresses: [],
    ...over,
  };
}

export const a = (family: 4 | 6, cidr: string, scope = "global"): Address => {
  const [address = "", prefix = ""] = cidr.split("/");
  return { family, address, prefix: Number(prefix), scope };
};

export function target(over: Partial<LinkTarget> = {}): LinkTarget {
  return {
    name: "",
    mtu: 0,
    noarp: false,
    addresses: [],
    up: true,
    exactAddresses: false,
    ...over,
  };
}
