/**
 * A complete read of one side, pod or guest, in one shape for the
 * comparison (complete-diff.ts): the `ip -d -j` listings of
 * src/net/iproute/complete-listings.ts parsed, each route with its family and its
 * locked metrics (from the text listing), and the files under
 * /proc/sys/net, the side's own and a fresh namespace's of its kernel.
 *
 * The guest's answer is untrusted input: every listing is parsed with
 * bounds (nesting depth, entries, lengths), anything malformed is an error
 * that names the listing, never a crash and never a partial read.
 */
import {
  LISTING_NAMES,
  type ListingName,
  type RawListing,
} from "../../net/iproute/complete-listings";
import { isOpening, nextBracket } from "../../net/parse/json-documents";

export type Json = Record<string, unknown>;

export interface CompleteRead {
  links: Json[];
  /** `address show`: per link, its addr_info in the kernel's order. */
  addresses: Json[];
  /** Both families, every table; each with `family` ("inet", "inet6") and `locks` added. */
  routes: Json[];
  /** Both families, each with `family`. */
  rules: Json[];
  /** Every state, and the proxy entries (`proxy: null`); each with `family`. */
  neighbours: Json[];
  /** null when the kernel has no nexthop objects. */
  nexthops: Json[] | null;
  /** Path below /proc/sys/net ("ipv4/conf/eth0/rp_filter") to its content. */
  sysctls: Map<string, string>;
  /** The same of a fresh namespace of this side's kernel. */
  fresh: Map<string, string>;
}

/** Bounds on what a side's read may hold (the guest's comes in one 4 MiB frame anyway). */
export const READ_BOUNDS = {
  /** Nesting of a listing's JSON; iproute2's deepest is ~5 (a link's linkinfo). */
  depth: 16,
  /** Entries of one listing. */
  entries: 200_000,
  /** Sysctl files of one side. */
  sysctls: 200_000,
  /** Characters of a sysctl path and of its value. */
  sysctlPath: 256,
  sysctlValue: 4096,
} as const;

/** A read that cannot be used: names the side, the listing and why. */
export class ReadError extends Error {}

/** The text and JSON route listings disagree: the routes changed between them. Read again. */
export class RoutesMovedError extends ReadError {}

/** The deepest nesting of a JSON text, counted outside strings, stopping past `limit`. */
function depthOf(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  for (let i = nextBracket(text, 0); i >= 0; i = nextBracket(text, i + 1)) {
    if (!isOpening(text.charCodeAt(i))) depth--;
    else if (++depth > max) {
      max = depth;
      if (max > limit) return max;
    }
  }
  return max;
}

/** JSON text from the other side, within the nesting bound; `fail` makes the error. */
function boundedJson(text: string, fail: (why: string) => Error): unknown {
  if (depthOf(text, READ_BOUNDS.depth) > READ_BOUNDS.depth) {
    throw fail(`nests deeper than ${READ_BOUNDS.depth} levels`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw fail("is not JSON");
  }
}

/** One JSON object (a lookup's answer), within the bounds. */
export function parseObject(what: string, text: string): Json {
  const doc = boundedJson(text, (why) => new ReadError(`${what} ${why}`));
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
    throw new ReadError(`${what} is not a JSON object`);
  }
  return doc as Json;
}

/** A listing's JSON: an array of objects, within the bounds. */
export function parseListing(side: string, name: string, text: string): Json[] {
  const fail = (why: string) => new ReadError(`${side}'s ${name} listing ${why}`);
  const doc = boundedJson(text, fail);
  if (!Array.isArray(doc)) throw fail("is not a JSON array");
  if (doc.length > READ_BOUNDS.entries) throw fail(`has more than ${READ_BOUNDS.entries} entries`);
  for (const x of doc) {
    if (x === null || typeof x !== "object" || Array.isArray(x)) {
      throw fail("holds an entry that is not an object");
    }
  }
  return doc as Json[];
}

const METRIC_WORDS = new Set([
  "mtu",
  "window",
  "rtt",
  "rttvar",
  "ssthresh",
  "cwnd",
  "advmss",
  "reordering",
  "hoplimit",
  "initcwnd",
  "features",
  "rto_min",
  "initrwnd",
  "quickack",
  "congctl",
  "fastopen_no_cookie",
]);

/** The metrics a text route line marks `NAME lock VALUE`, sorted. */
export function lockedMetrics(line: string): string[] {
  const words = line.trim().split(/\s+/);
  return words.filter((w, i) => METRIC_WORDS.has(w) && words[i + 1] === "lock").sort();
}

/**
 * Each JSON route with `family` and its `locks` (when any), matched to the
 * text listing's lines by position (one line per route, multipath hops on
 * indented lines below it). Throws RoutesMovedError when the two disagree.
 * A lock is a flag on a metric, so routes without metrics have none: a read
 * without the text listing (the host's own pod read leaves it out then) is
 * taken as it is; a text listing given is always checked.
 */
function withLocks(
  side: string,
  family: string,
  routes: Json[],
  given: string | undefined,
): Json[] {
  if (given === undefined && !routes.some((r) => r.metrics !== undefined))
    return routes.map((r) => ({ family, ...r }));
  const text = given ?? "";
  const lines = text.split("\n").filter((l) => l.trim() !== "" && !/^\s/.test(l));
  const same =
    lines.length === routes.length &&
    lines.every((l, i) => l.split(/\s+/).includes(String(routes[i]?.dst)));
  if (!same) {
    throw new RoutesMovedError(
      `${side}'s routes (${family}) changed between the JSON and the text listing`,
    );
  }
  return routes.map((r, i) => {
    const locks = lockedMetrics(lines[i] as string);
    return locks.length > 0 ? { family, ...r, locks } : { family, ...r };
  });
}

/** Sysctl files within the bounds; a path is [A-Za-z0-9_.:@-] parts joined by "/", never "." or "..". */
function checkSysctls(
  side: string,
  what: string,
  entries: Iterable<readonly [string, string]>,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, value] of entries) {
    const parts = path.split("/");
    const bad =
      path.length > READ_BOUNDS.sysctlPath ||
      parts.some((p) => p === "" || p === "." || p === ".." || !/^[A-Za-z0-9_.:@+-]+$/.test(p));
    if (bad) throw new ReadError(`${side}'s ${what} name a file that is no sysctl path`);
    if (value.length > READ_BOUNDS.sysctlValue) {
      throw new ReadError(`${side}'s ${what} hold a value longer than ${READ_BOUNDS.sysctlValue}`);
    }
    if (out.has(path)) throw new ReadError(`${side}'s ${what} list a file twice`);
    if (out.size >= READ_BOUNDS.sysctls) {
      throw new ReadError(`${side}'s ${what} are more than ${READ_BOUNDS.sysctls} files`);
    }
    out.set(path, value);
  }
  return out;
}

/** The listings, sysctls and fresh sysctls of one side as a CompleteRead; throws ReadError. */
export function toCompleteRead(
  side: string,
  listings: readonly (Pick<RawListing, "output" | "error"> & { name: string })[],
  sysctls: Iterable<readonly [string, string]>,
  fresh: Iterable<readonly [string, string]>,
): CompleteRead {
  const by = new Map<ListingName, { output: string; error?: string }>();
  for (const l of listings) {
    if (!(LISTING_NAMES as readonly string[]).includes(l.name)) {
      throw new ReadError(`${side}'s read has a listing this netagentctl does not know`);
    }
    if (by.has(l.name as ListingName)) throw new ReadError(`${side}'s read lists ${l.name} twice`);
    by.set(l.name as ListingName, { output: l.output, ...(l.error ? { error: l.error } : {}) });
  }
  const json = (name: ListingName): Json[] | null => {
    const l = by.get(name);
    if (l === undefined) throw new ReadError(`${side}'s read has no ${name} listing`);
    return l.error ? null : parseListing(side, name, l.output);
  };
  const text = (name: ListingName) => by.get(name)?.output;
  const families = [
    ["inet", "4"],
    ["inet6", "6"],
  ] as const;
  const routes: Json[] = [];
  const rules: Json[] = [];
  const neighbours: Json[] = [];
  for (const [family, n] of families) {
    const r = json(`route${n}`);
    if (r) routes.push(...withLocks(side, family, r, text(`route-text${n}`)));
    for (const x of json(`rule${n}`) ?? []) rules.push({ family, ...x });
    for (const x of [...(json(`neighbour${n}`) ?? []), ...(json(`proxy${n}`) ?? [])])
      neighbours.push({ family, ...x });
  }
  return {
    links: json("link") ?? [],
    addresses: json("address") ?? [],
    routes,
    rules,
    neighbours,
    nexthops: json("nexthop"),
    sysctls: checkSysctls(side, "sysctls", sysctls),
    fresh: checkSysctls(side, "fresh namespace's sysctls", fresh),
  };
}
