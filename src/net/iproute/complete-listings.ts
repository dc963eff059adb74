/**
 * The `ip` part of a complete read of a network namespace: everything
 * `ip -d -j` prints for links, addresses, routes of every table, rules,
 * neighbours in every state and the proxy entries (each of those per
 * family, so no family is guessed), and nexthop objects; and the routes
 * once more as text, the only place iproute2 says which metrics are
 * locked (`mtu lock 1400`: its JSON drops the lock). The agent's Read and
 * the host's pod read run exactly these, so both sides mean the same.
 */

import { splitJsonDocuments } from "../parse/json-documents";
import { type RawRun, rawRunError, runIpRaw, runListings } from "./ip-raw";
import type { IpRunner } from "./ip-runner";

const PER_FAMILY = [
  ["route", "route show table all"],
  ["rule", "rule show"],
  ["neighbour", "neigh show nud all"],
  ["proxy", "neigh show proxy"],
] as const;

export const LISTING_NAMES = [
  "link",
  "address",
  ...PER_FAMILY.flatMap(([n]) => [`${n}4`, `${n}6`] as const),
  "nexthop",
  "route-text4",
  "route-text6",
] as const;

export type ListingName = (typeof LISTING_NAMES)[number];

export interface RawListing {
  name: ListingName;
  /** What ip printed: one JSON document, or text for route-text*. */
  output: string;
  /** Why this kernel cannot list it (no IPv6, no nexthop objects); output is then "". */
  error?: string;
}

/** A kernel without the feature: the listing is absent, not a failure of the read. */
const UNSUPPORTED = /Address family not supported|not supported|Unknown|Invalid argument/i;

/** Runs the listings in `runner`'s namespace; throws (naming the command) when one fails. */
export async function readListings(
  runner: IpRunner,
  opts: {
    signal?: AbortSignal;
    /**
     * A family's text route listing only when its JSON has a route with
     * metrics (the only routes that can have a lock), read after the JSON;
     * left out otherwise. Two `ip` processes fewer for most reads; for a
     * reader that knows it (the host's own pod read, and a guest's Read
     * that asks for it: netagentctl builds before it match the two always).
     */
    textWhenMetrics?: boolean;
  } = {},
): Promise<RawListing[]> {
  const batch = (family: string[], lines: readonly string[]) => {
    const args = ["-d", "-j", ...family, "-batch", "-"];
    // Without a family or with -6, the lines are a resident session's when it is free (the same words).
    const run =
      family.length === 0 || family[0] === "-6"
        ? runListings(runner, lines, { ...opts, ipv6: family[0] === "-6" })
        : runIpRaw(runner, args, { ...opts, stdin: `${lines.join("\n")}\n` });
    return run.then((r) => ({
      args,
      lines,
      r,
    }));
  };
  const one = (args: string[]) => runIpRaw(runner, args, opts).then((r) => ({ args, r }));
  const perFamily = PER_FAMILY.map(([, line]) => line);
  const text = (family: "-4" | "-6") => one(["-d", family, "route", "show", "table", "all"]);
  const later = opts.textWhenMetrics === true;
  // Links, addresses and nexthop objects in one run. A kernel without
  // nexthop objects fails the batch at its last line: then they are read
  // apart, the nexthop listing's failure its own.
  const familyLess = async () => {
    const together = await batch([], ["link show", "address show", "nexthop show"]);
    if (together.r.code === 0) return { links: together, nexthop: undefined };
    const [links, nexthop] = await Promise.all([
      batch([], ["link show", "address show"]),
      one(["-d", "-j", "nexthop", "show"]),
    ]);
    return { links, nexthop };
  };
  const [{ links, nexthop }, v4, v6, text4, text6] = await Promise.all([
    familyLess(),
    batch(["-4"], perFamily),
    batch(["-6"], perFamily),
    later ? undefined : text("-4"),
    later ? undefined : text("-6"),
  ]);
  const out: RawListing[] = [];
  const documents = (b: { args: string[]; lines: readonly string[]; r: RawRun }) => {
    let docs: unknown[] = [];
    try {
      docs = splitJsonDocuments(b.r.stdout);
    } catch {}
    if (docs.length !== b.lines.length) {
      const said = `${docs.length} listings printed for ${b.lines.length} lines`;
      throw rawRunError(b.args, { ...b.r, stderr: `${b.r.stderr}\n${said}` });
    }
    return docs.map((d) => JSON.stringify(d));
  };
  if (links.r.code !== 0) throw rawRunError(links.args, links.r);
  const [link = "[]", address = "[]", nexthops = "[]"] = documents(links);
  out.push({ name: "link", output: link }, { name: "address", output: address });
  if (nexthop === undefined) out.push({ name: "nexthop", output: nexthops });
  for (const [family, b] of [
    ["4", v4],
    ["6", v6],
  ] as const) {
    if (b.r.code !== 0 && family === "6" && UNSUPPORTED.test(b.r.stderr)) {
      for (const [n] of PER_FAMILY)
        out.push({ name: `${n}6`, output: "", error: b.r.stderr.trim() });
      continue;
    }
    if (b.r.code !== 0) throw rawRunError(b.args, b.r);
    documents(b).forEach((output, i) => {
      out.push({ name: `${(PER_FAMILY[i] as (typeof PER_FAMILY)[number])[0]}${family}`, output });
    });
  }
  const optional = (name: ListingName, o: { args: string[]; r: RawRun }) => {
    if (o.r.code === 0) return out.push({ name, output: o.r.stdout.trim() || "[]" });
    if (UNSUPPORTED.test(o.r.stderr))
      return out.push({ name, output: "", error: o.r.stderr.trim() });
    throw rawRunError(o.args, o.r);
  };
  if (nexthop !== undefined) optional("nexthop", nexthop);
  const withMetrics = (name: ListingName) =>
    out.some((l) => l.name === name && l.output.includes('"metrics":'));
  const [t4, t6] = later
    ? await Promise.all([
        withMetrics("route4") ? text("-4") : undefined,
        withMetrics("route6") ? text("-6") : undefined,
      ])
    : [text4, text6];
  if (t4) optional("route-text4", t4);
  if (t6) optional("route-text6", t6);
  return out.sort((a, b) => LISTING_NAMES.indexOf(a.name) - LISTING_NAMES.indexOf(b.name));
}

/** Each listing's own `ip` words, for a read of some of them. */
function listingArgs(name: ListingName): string[] {
  if (name === "link" || name === "address" || name === "nexthop")
    return ["-d", "-j", name, "show"];
  const family = `-${name.slice(-1)}`;
  if (name.startsWith("route-text")) return ["-d", family, "route", "show", "table", "all"];
  const [, line = ""] = PER_FAMILY.find(([n]) => name.slice(0, -1) === n) ?? [];
  return ["-d", "-j", family, ...line.split(" ")];
}

/**
 * Some listings alone, each by its own `ip` run, printed as readListings
 * prints them: a read cheap enough to repeat while waiting for something
 * (the address flags of duplicate address detection), where readListings
 * takes every listing at one moment.
 */
export async function readSomeListings(
  runner: IpRunner,
  names: ReadonlySet<ListingName>,
  opts: { signal?: AbortSignal } = {},
): Promise<RawListing[]> {
  const wanted = LISTING_NAMES.filter((n) => names.has(n));
  const runs = await Promise.all(
    wanted.map((name) => runIpRaw(runner, listingArgs(name), opts).then((r) => ({ name, r }))),
  );
  return runs.map(({ name, r }): RawListing => {
    const args = listingArgs(name);
    // As readListings: only IPv6's and the optional listings may be missing from a kernel.
    const optional = name.endsWith("6") || name === "nexthop" || name === "route-text4";
    if (r.code !== 0 && optional && UNSUPPORTED.test(r.stderr))
      return { name, output: "", error: r.stderr.trim() };
    if (r.code !== 0) throw rawRunError(args, r);
    if (name === "nexthop" || name.startsWith("route-text"))
      return { name, output: r.stdout.trim() || "[]" };
    const [doc = []] = splitJsonDocuments(r.stdout);
    return { name, output: JSON.stringify(doc) };
  });
}
