/**
 * The guest's network policy: what the host may make of the guest network,
 * fixed when the agent starts (load.ts) and never changed by a call. The
 * schema is valibot's; a policy that does not parse names the field
 * (`routes.gateways[2]: ...`) and stops the agent. Every list is what is
 * allowed; a field left out allows nothing of its kind, except where its
 * comment says otherwise. docs/policy.md is the reference.
 */
import * as v from "valibot";
import { parseCidr } from "./prefixes";

/** A CIDR (either family) as ipaddr.js reads it; host bits allowed, they are cleared when compared. */
const Cidr = v.pipe(
  v.string(),
  v.maxLength(64),
  v.check((s) => parseCidr(s) !== undefined, "is not a CIDR (ADDRESS/PREFIX)"),
);

const Mac = v.pipe(
  v.string(),
  v.regex(/^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/, "is not a MAC address (xx:xx:xx:xx:xx:xx)"),
  v.toLowerCase(),
);

/** Entries of one list of a policy at most (as many as routes in one request). */
const MAX_POLICY_LIST = 100_000;

/** A list of at most {@link MAX_POLICY_LIST} entries (a large pod lists 10,000 routes). */
const List = <T extends v.GenericSchema>(item: T) =>
  v.pipe(v.array(item), v.maxLength(MAX_POLICY_LIST));

/** `"any"` or a list. */
const AnyOr = <T extends v.GenericSchema>(item: T) => v.union([v.literal("any"), List(item)]);

/** Prefixes matched exactly (`exact`) or containing the value with a prefix at least as long (`within`). */
const PrefixSet = v.strictObject({
  exact: v.optional(List(Cidr), []),
  within: v.optional(List(Cidr), []),
});

const LINK_FLAGS = ["noarp", "down", "promisc", "allmulticast"] as const;
export const SCOPES = ["universe", "site", "link", "host", "nowhere"] as const;
const ROUTE_TYPES = ["unicast", "blackhole", "unreachable", "prohibit", "throw"] as const;
const NEIGHBOUR_STATES = [
  "permanent",
  "reachable",
  "stale",
  "delay",
  "probe",
  "failed",
  "noarp",
  "incomplete",
  "none",
  "proxy",
] as const;
const NEIGHBOUR_FLAGS = ["router", "extern_learn"] as const;
/** What the running phase may still change (phases.running). */
export const KINDS = [
  "interfaces",
  "routes",
  "rules",
  "neighbours",
  "sysctls",
  "packetFilter",
] as const;
export type Kind = (typeof KINDS)[number];

const Table = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(0xffffffff));

const PolicySchema = v.strictObject({
  /** The schema's version: 1. */
  netagentPolicy: v.literal(1),
  interfaces: v.optional(
    v.strictObject({
      macs: v.optional(AnyOr(Mac), []),
      /** The names links may carry; "any" by default (a MAC list is the identity). */
      names: v.optional(AnyOr(v.pipe(v.string(), v.maxLength(15))), "any"),
      /** Links with addresses at most, after the call. */
      max: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(4096)), 0),
      mtu: v.optional(
        v.strictObject({
          min: v.pipe(v.number(), v.integer(), v.minValue(68), v.maxValue(65535)),
          max: v.pipe(v.number(), v.integer(), v.minValue(68), v.maxValue(65535)),
        }),
        { min: 1280, max: 1500 },
      ),
      flags: v.optional(List(v.picklist(LINK_FLAGS)), []),
    }),
    {},
  ),
  addresses: v.optional(
    v.strictObject({
      ipv4: v.optional(PrefixSet, {}),
      ipv6: v.optional(PrefixSet, {}),
      perInterface: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 0),
    }),
    {},
  ),
  routes: v.optional(
    v.strictObject({
      destinations: v.optional(PrefixSet, {}),
      /** Gateways (of routes, paths and nexthop objects): addresses inside these prefixes. */
      gateways: v.optional(List(Cidr), []),
      tables: v.optional(List(Table), [254]),
      types: v.optional(List(v.picklist(ROUTE_TYPES)), ["unicast"]),
      scopes: v.optional(List(v.picklist(SCOPES)), ["universe", "link"]),
    }),
    {},
  ),
  rules: v.optional(
    v.strictObject({
      allowed: v.optional(v.boolean(), false),
      tables: v.optional(List(Table), []),
    }),
    {},
  ),
  neighbours: v.optional(
    v.strictObject({
      ips: v.optional(List(Cidr), []),
      lladdrs: v.optional(AnyOr(Mac), []),
      states: v.optional(List(v.picklist(NEIGHBOUR_STATES)), ["permanent"]),
      /** Entry flags that may be set. */
      flags: v.optional(List(v.picklist(NEIGHBOUR_FLAGS)), ["router"]),
    }),
    {},
  ),
  /** Key (as sysctl(8) names it) to the values it may be given, or "any". */
  sysctls: v.optional(
    v.record(v.pipe(v.string(), v.maxLength(256)), AnyOr(v.pipe(v.string(), v.maxLength(256)))),
    {},
  ),
  packetFilter: v.optional(v.boolean(), false),
  reads: v.optional(v.boolean(), false),
  /** tun/tap devices the agent may make, by name. */
  tuntap: v.optional(
    v.strictObject({ names: v.optional(List(v.pipe(v.string(), v.maxLength(15))), []) }),
    {},
  ),
  phases: v.optional(
    v.strictObject({
      /** The phase at start (without front mode the only one, unless persisted). */
      initial: v.optional(v.picklist(["setup", "running"]), "setup"),
      /** Front mode: the running phase begins this long after the first workload container started. */
      settleMs: v.optional(
        v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3_600_000)),
        10_000,
      ),
      /** What may still change in the running phase (default: nothing). */
      running: v.optional(List(v.picklist(KINDS)), []),
    }),
    {},
  ),
});

export type Policy = v.InferOutput<typeof PolicySchema>;

/** A policy that does not parse; the agent exits 2. */
export class PolicyError extends Error {
  override readonly name = "PolicyError";
}

/**
 * Of a union's failed branches, the issue that went deepest (it names the
 * field), with its whole path (a branch's path is relative to the union).
 */
function deepest(issue: v.BaseIssue<unknown>): { message: string; path: string; input: unknown } {
  const here = (issue.path ?? []).map((p) => String(p.key));
  let best = { message: issue.message, path: here, input: issue.input };
  for (const sub of issue.issues ?? []) {
    const d = deepest(sub);
    const path = [...here, ...(d.path === "" ? [] : d.path.split("."))];
    if (path.length > best.path.length) best = { message: d.message, path, input: d.input };
  }
  return { ...best, path: best.path.join(".") };
}

/** Parses policy text (JSON); throws PolicyError naming where it came from and the field. */
export function parsePolicy(text: string, source: string): Policy {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new PolicyError(`policy ${source}: not JSON: ${(err as Error).message}`);
  }
  const out = v.safeParse(PolicySchema, json);
  if (out.success) {
    const mtu = out.output.interfaces.mtu;
    if (mtu.min > mtu.max) {
      throw new PolicyError(
        `policy ${source}: interfaces.mtu: min ${mtu.min} is above max ${mtu.max}`,
      );
    }
    return out.output;
  }
  const issue = deepest(out.issues[0]);
  const path = issue.path || "(top)";
  const got =
    issue.input === undefined ? "" : ` (got ${JSON.stringify(issue.input)?.slice(0, 80)})`;
  throw new PolicyError(`policy ${source}: ${path}: ${issue.message}${got}`);
}
