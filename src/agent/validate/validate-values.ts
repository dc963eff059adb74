/**
 * Value checks the netagent.v1 validators share (validate-state.ts and
 * the files beside it): addresses and CIDRs of a family, an entry's
 * family, MTUs, list bounds. Each failure is INVALID_ARGUMENT naming the
 * field and the value.
 */
import {
  type Family,
  maxPrefix,
  networkText,
  type ParsedIp,
  parseIp,
  parsePrefix,
} from "../../net/model/address";
import { invalid } from "./validate-fields";

export function ip(field: string, value: string, family?: Family): ParsedIp {
  const p = parseIp(value);
  if (typeof p === "string") throw invalid(field, value, `is not a valid address: ${p}`);
  if (family !== undefined && p.family !== family)
    throw invalid(field, value, `is IPv${p.family} in an IPv${family} entry`);
  return p;
}

export function cidr(field: string, value: string, family: Family): string {
  const [addr = "", len, extra] = value.split("/");
  if (extra !== undefined) throw invalid(field, value, "is not a CIDR");
  // The whole value is quoted, not only its address part.
  const a = parseIp(addr);
  if (typeof a === "string") throw invalid(field, value, `is not a valid CIDR: ${a}`);
  if (a.family !== family)
    throw invalid(field, value, `is IPv${a.family} in an IPv${family} entry`);
  const prefix = len === undefined ? maxPrefix(family) : parsePrefix(len, family);
  if (typeof prefix === "string") throw invalid(field, value, prefix);
  return `${networkText(a.bytes, prefix)}/${prefix}`;
}

export function family(field: string, declared: number, probes: string[]): Family {
  if (declared !== 0 && declared !== 4 && declared !== 6)
    throw invalid(field, declared, "is not a family (0 = from the addresses, 4, 6)");
  const first = probes.find(Boolean);
  const seen: Family | undefined = first ? (first.includes(":") ? 6 : 4) : undefined;
  if (seen !== undefined && declared !== 0 && seen !== declared)
    throw invalid(field, declared, `does not match its IPv${seen} addresses`);
  return seen ?? (declared === 6 ? 6 : 4);
}

export function mtu(field: string, value: number): number {
  if (value !== 0 && (value < 68 || value > 65535))
    throw invalid(field, value, "is not an MTU (68-65535, or 0)");
  return value;
}

export function bounded<T>(field: string, list: readonly T[], max: number): readonly T[] {
  if (list.length > max) throw invalid(field, list.length, `entries: at most ${max} are accepted`);
  return list;
}
