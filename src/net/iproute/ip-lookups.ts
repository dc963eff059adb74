/**
 * Route lookups run through one `ip -d -j -force -batch -`: each lookup a
 * `route get` line, in order. A lookup the kernel answers prints its route
 * (one JSON document); one it refuses ("Network is unreachable", a
 * prohibit route's "Permission denied") prints iproute2's words and
 * "Command failed -:N" on standard error, and -force goes on with the
 * next. Both are decisions; only ip failing as a whole is an error.
 */

import { NetError } from "../model/net-error";
import { failedBatchLines } from "../parse/ip-errors";
import { splitJsonDocuments } from "../parse/json-documents";
import { rawRunError, runIpRaw } from "./ip-raw";
import type { IpRunner } from "./ip-runner";
import { type LookupSpec, lookupWords } from "./route-lookup";

export type Decision = { route: Record<string, unknown> } | { error: string };

/**
 * The decisions for `lookups` (already checked: route-lookup.ts) in
 * `runner`'s namespace, in order. Throws a NetError when ip failed as a
 * whole or its output cannot be matched to the lines.
 */
export async function runLookups(
  runner: IpRunner,
  lookups: readonly LookupSpec[],
  opts: { signal?: AbortSignal } = {},
): Promise<Decision[]> {
  if (lookups.length === 0) return [];
  const lines = lookups.map((l) => `route get ${lookupWords(l).join(" ")}`);
  const args = ["-d", "-j", "-force", "-batch", "-"];
  const r = await runIpRaw(runner, args, { ...opts, stdin: `${lines.join("\n")}\n` });
  const refused = new Map(failedBatchLines(r.stderr).map((f) => [f.index, f.text]));
  if (r.code !== 0 && refused.size === 0) throw rawRunError(args, r);
  let docs: unknown[];
  try {
    docs = splitJsonDocuments(r.stdout);
  } catch {
    throw new NetError("internal", `ip ${args.join(" ")}: unreadable output`);
  }
  if (
    docs.length + refused.size !== lookups.length ||
    [...refused.keys()].some((i) => i >= lookups.length)
  ) {
    throw new NetError(
      "internal",
      `ip ${args.join(" ")}: ${docs.length} answers and ${refused.size} refusals for ${lookups.length} lookups`,
    );
  }
  let next = 0;
  return lookups.map((_, i) => {
    const why = refused.get(i);
    if (why !== undefined) return { error: why };
    const doc = docs[next++];
    const route = Array.isArray(doc) ? doc[0] : doc;
    return { route: route && typeof route === "object" ? (route as Record<string, unknown>) : {} };
  });
}
