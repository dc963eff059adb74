/**
 * The parts of a complete read that need more than one JSON listing:
 * route metrics' locks, which only the text dump prints (`mtu lock 1400`;
 * `ip -j` drops them), and which nexthop objects are IPv6 (`ip -6 nexthop
 * show`; a single one without a gateway shows no family). Run beside
 * IpRunner's reads: the text dumps as one-shot processes of its own
 * IpOneShot, the IPv6 listings as it runs them (the IPv6 session's).
 */

import type { Route } from "../model/model";
import { readDocuments } from "../parse/ip-results";
import { nexthopIds } from "../parse/parse-ip-nexthops";
import { addLocks, parseAllTableRoutes } from "../parse/parse-ip-routes";
import { parseRules, type Rule } from "../plan/rules";
import type { IpOneShot } from "./ip-one-shot";
import type { RunResult } from "./ip-resident";

/** Whether a route listing has a route with metrics (only those can have a lock). */
function hasMetrics(doc: unknown): boolean {
  if (!Array.isArray(doc)) return false;
  for (const r of doc) {
    const m = r && typeof r === "object" ? (r as { metrics?: unknown }).metrics : undefined;
    if (Array.isArray(m) && m.some((x) => x && typeof x === "object" && Object.keys(x).length > 0))
      return true;
  }
  return false;
}

/** How many times a text dump that does not line up with the JSON one is read again. */
const LOCK_READS = 3;

/**
 * The routes of `doc` (`ip -j -d route show table all`) with their locks:
 * when one has metrics, the text dump is read and lined up with it; when
 * the table changed between the two (they do not line up), both are read
 * again, a few times, then the routes are taken without locks.
 */
export async function routesWithLocks(
  oneShot: IpOneShot,
  doc: unknown,
  signal?: AbortSignal,
): Promise<Route[]> {
  let json = doc;
  for (let i = 0; i < LOCK_READS && hasMetrics(json); i++) {
    const args = ["-details", "route", "show", "table", "all"];
    const text = await oneShot.run(args, undefined, signal);
    // A text listing is no JSON: only a failure is taken from readDocuments.
    if (text.killed || text.exitCode !== 0) readDocuments(args.join(" "), text);
    if (addLocks(json, text.stdout)) break;
    const again = await oneShot.run(["-json", ...args], undefined, signal);
    [json] = readDocuments(`-json ${args.join(" ")}`, again);
  }
  return parseAllTableRoutes(json);
}

/**
 * IPv6 rules and the ids of the IPv6 nexthop objects: one `ip -6 -json
 * -details -batch -` of two lines, run by `run6`. None of either on a
 * kernel without IPv6 (ipv6.disable=1).
 */
export async function readFamily6(
  run6: (lines: readonly string[]) => Promise<RunResult>,
): Promise<{ rules: Rule[]; nexthops6: Set<number> }> {
  const lines = ["rule show", "nexthop show"];
  const r = await run6(lines);
  if (!r.killed && r.exitCode !== 0 && /Address family not supported/i.test(r.stderr)) {
    return { rules: [], nexthops6: new Set() };
  }
  const [rules, nexthops] = readDocuments(`-6 ${lines.join("; ")}`, r);
  return { rules: parseRules(rules, 6), nexthops6: nexthopIds(nexthops) };
}
