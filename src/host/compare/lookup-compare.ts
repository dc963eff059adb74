/**
 * Two routing decisions side by side: the pod's and the guest's answer to
 * one lookup (src/net/iproute/ip-lookups.ts), compared whole but for what
 * mirror-differences.ts lists (lookupCache, lookupKernelLinkLocalSource), and said in words. A refusal
 * ("Network is unreachable", a prohibit route's "Permission denied") is a
 * decision too: the same refusal on both sides agrees. Pure.
 */
import type { Decision } from "../../net/iproute/ip-lookups";
import { type LookupSpec, lookupWords } from "../../net/iproute/route-lookup";
import { canonical, flatten } from "./complete-objects";
import type { Json } from "./complete-read";
import { isKernelLinkLocal, MIRROR_DIFFERENCES } from "./mirror-differences";

const DROP: readonly string[] = MIRROR_DIFFERENCES.lookupCache.fields;

function decisionText(d: Decision): string {
  if ("error" in d) return `error ${d.error}`;
  const kept = Object.fromEntries(Object.entries(d.route).filter(([k]) => !DROP.includes(k)));
  // MIRROR_DIFFERENCES.lookupKernelLinkLocalSource
  if (typeof kept.prefsrc === "string" && isKernelLinkLocal(kept.prefsrc))
    kept.prefsrc = "(a kernel link-local)";
  return canonical(flatten(kept as Json));
}

export function sameDecision(a: Decision, b: Decision): boolean {
  return decisionText(a) === decisionText(b);
}

/** Words a route answer is read in first, as `ip route` orders them; the rest follow as they came. */
const ORDER: readonly [string, string][] = [
  ["type", ""],
  ["gateway", "via"],
  ["dev", "dev"],
  ["prefsrc", "src"],
  ["table", "table"],
];

/** `[TYPE] via GW dev DEV src SRC table T [more...]`, or `refused: WHY`. */
export function decisionWords(d: Decision): string {
  if ("error" in d) return `refused: ${d.error}`;
  const r = d.route;
  const t: string[] = [];
  for (const [k, word] of ORDER) {
    const v = r[k];
    if (v === undefined || (k === "type" && v === "unicast")) continue;
    if (word) t.push(word);
    t.push(String(v));
  }
  // The lookup's own selectors come back as they went: not repeated (tos is the route's: kept).
  const echo = new Set(["dst", "from", "uid", "mark", "ipproto", "sport", "dport", "iif", "oif"]);
  const rest = Object.entries(r).filter(
    ([k]) => !ORDER.some(([o]) => o === k) && !echo.has(k) && !DROP.includes(k),
  );
  for (const [k, v] of flatten(Object.fromEntries(rest) as Json)) {
    if (v === "") continue;
    t.push(v === "true" ? k : `${k} ${v}`);
  }
  return t.join(" ") || "(empty answer)";
}

/** `route get WORDS`. */
export function lookupText(l: LookupSpec): string {
  return `route get ${lookupWords(l).join(" ")}`;
}
