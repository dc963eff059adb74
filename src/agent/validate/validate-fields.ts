/**
 * The field checks every request validator shares, Kata's and
 * netagent.v1's: link names, MACs, MTUs, addresses and CIDRs of a family,
 * the family of an entry, list bounds. Each failure is INVALID_ARGUMENT
 * naming the field and the value.
 */
import * as v from "valibot";
import { IPFamily } from "../../gen/types_pb";
import {
  type Family,
  maxPrefix,
  networkText,
  type ParsedIp,
  parseIp,
  parsePrefix,
} from "../../net/model/address";
import { IPV6_MIN_MTU } from "../../net/model/model";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { quote } from "../../ttrpc/quote";

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

/** An MTU of 68-65535 (callers skip 0, "keep the current one"). */
export function validateMtu(field: string, value: number): number {
  return check(MtuSchema, field, value);
}

/** An MTU of 68-65535, or 0 (netagent.v1: "the kernel's default"). */
export function mtuOrZero(field: string, value: number): number {
  return value === 0 ? 0 : validateMtu(field, value);
}

/**
 * An MTU below IPv6's least, for a link whose request lists an IPv6
 * address (`ipv6`: its field and value): the kernel would drop the link's
 * IPv6 addresses and routes, so the request cannot be carried out and is
 * refused before anything changes. Without IPv6 addresses requested the
 * kernel dropping them is what was asked for.
 */
export function mtuForIpv6(
  field: string,
  value: number,
  ipv6?: { field: string; address: string },
): void {
  if (value === 0 || value >= IPV6_MIN_MTU || ipv6 === undefined) return;
  throw invalid(
    field,
    value,
    `is below ${IPV6_MIN_MTU}, the least MTU IPv6 takes, and ${ipv6.field} is IPv6 (${ipv6.address}): the kernel drops a link's IPv6 addresses below it`,
  );
}

/** An address, of `family` when one is given. */
export function validIp(field: string, value: string, family?: Family): ParsedIp {
  const parsed = parseIp(value);
  if (typeof parsed === "string") throw invalid(field, value, `is not a valid address: ${parsed}`);
  if (family !== undefined && parsed.family !== family) {
    throw invalid(field, value, `is IPv${parsed.family} in an IPv${family} entry`);
  }
  return parsed;
}

/** A Kata message's family (types.IPFamily: 0 = v4, 1 = v6) as 4 or 6. */
export function familyFromProto(field: string, value: number): Family {
  if (value === IPFamily.v4) return 4;
  if (value === IPFamily.v6) return 6;
  throw invalid(field, value, "is not a family (0 = v4, 1 = v6)");
}

/**
 * The family of a Kata entry: from its addresses when it has any (the field
 * defaults to v4, so an old runtime's IPv6 routes arrive as "v4"); an
 * explicit v6 with IPv4 addresses is an error.
 */
export function resolveFamily(field: string, declared: number, addresses: string[]): Family {
  const fam = familyFromProto(`${field}.family`, declared);
  const seen = addresses.filter(Boolean).map((a) => (a.includes(":") ? 6 : 4));
  return settleFamily(field, fam, seen[0]);
}

/** The declared family `fam` against the family of the first address given (if any). */
function settleFamily(field: string, fam: Family, first: Family | undefined): Family {
  if (first === undefined) return fam;
  if (fam === 6 && first === 4)
    throw invalid(`${field}.family`, "v6", "does not match its IPv4 addresses");
  return first;
}

/** A CIDR of `family` in canonical form (host bits cleared); a bare address is a host route. */
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

/**
 * The family of a netagent.v1 entry (0 = from its addresses, 4, 6): from
 * the first address given, which an explicit family must match.
 */
export function stateFamily(field: string, declared: number, probes: string[]): Family {
  if (declared !== 0 && declared !== 4 && declared !== 6)
    throw invalid(field, declared, "is not a family (0 = from the addresses, 4, 6)");
  const first = probes.find(Boolean);
  const seen: Family | undefined = first ? (first.includes(":") ? 6 : 4) : undefined;
  if (seen !== undefined && declared !== 0 && seen !== declared)
    throw invalid(field, declared, `does not match its IPv${seen} addresses`);
  return seen ?? (declared === 6 ? 6 : 4);
}

/** `list` when it has at most `max` entries. */
export function bounded<T>(field: string, list: readonly T[], max: number): readonly T[] {
  if (list.length > max) throw invalid(field, list.length, `entries: at most ${max} are accepted`);
  return list;
}
