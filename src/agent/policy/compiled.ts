/**
 * A policy made ready for checking: its prefix lists read once by
 * ipaddr.js, its sets built, its sysctl keys spelled as the agent spells
 * them; and the refusal's shape. Pure; shared by check.ts and
 * check-routes.ts.
 */
import { parseSysctlKey } from "../../net/sysctl/sysctl-keys";
import { AddressSet, PrefixList, PrefixSet } from "./prefixes";
import type { Refusal } from "./request";
import type { Policy } from "./schema";

/** A policy with its prefix lists read once. */
export interface CompiledPolicy {
  policy: Policy;
  addresses: { 4: AddressSet; 6: AddressSet };
  destinations: PrefixSet;
  gateways: PrefixList;
  neighbourIps: PrefixList;
  macs: Set<string> | "any";
  names: Set<string> | "any";
  lladdrs: Set<string> | "any";
  /** By key as the agent spells it (sysctl-keys.ts), or a pattern with `*` for the link. */
  sysctls: Map<string, readonly string[] | "any">;
}

export function compilePolicy(policy: Policy): CompiledPolicy {
  const set = <T extends string>(x: readonly T[] | "any") => (x === "any" ? x : new Set(x));
  return {
    policy,
    addresses: {
      4: new AddressSet(policy.addresses.ipv4),
      6: new AddressSet(policy.addresses.ipv6),
    },
    destinations: new PrefixSet(policy.routes.destinations),
    gateways: new PrefixList(policy.routes.gateways),
    neighbourIps: new PrefixList(policy.neighbours.ips),
    macs: set(policy.interfaces.macs),
    names: set(policy.interfaces.names),
    lladdrs: set(policy.neighbours.lladdrs),
    sysctls: new Map(
      Object.entries(policy.sysctls).map(([key, values]) => {
        const k = key.includes("*") ? undefined : parseSysctlKey(key);
        return [k === undefined || typeof k === "string" ? key : k.key, values];
      }),
    ),
  };
}

export const refuse = (rule: string, field: string, value: unknown, why: string): Refusal => ({
  rule,
  field,
  value: typeof value === "string" ? value : JSON.stringify(value),
  why,
});

/** 127.0.0.0/8 or ::1: never a route's source or a neighbour under any policy (as genpolicy's rules). */
export function isLoopback(ip: string): boolean {
  return /^127\./.test(ip) || ip === "::1";
}
