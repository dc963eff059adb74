/**
 * Asks the same route lookups in the pod and in the guest and compares the
 * answers: type, device (by name), gateway, table, source asked and
 * preferred source; an error is compared as its message. Both netns get the
 * same multipath hash seed first (it is random per netns otherwise, and then
 * the hop a lookup picks of a multipath route differs for no fault of the
 * mirror); this is done after the complete comparison, so it is never part
 * of what is compared. Two answers differing in their source alone are
 * judged by diff's own judge (src/host/compare/source-order.ts), so the
 * two never excuse different things.
 */
import { existsSync } from "node:fs";
import { type SourceEntry, sourceByOrder } from "../../src/host/compare/source-order";
import type { SourceRead } from "../../src/host/compare/source-question";
import { run } from "../helpers/process";
import { isKernelLinkLocal } from "./ignore";
import type { Probe } from "./probes";

export interface LookupResult {
  probe: Probe;
  pod: string;
  guest: string;
  /** The same answer, or a difference an entry of the ignore list explains (`legit`). */
  agree: boolean;
  /** The entry of the ignore list that explains a different answer. */
  legit?: "lookupLinkLocalAnyLink" | "lookupCarrierOnly" | SourceEntry;
}

const HASH_SEED = "net.ipv4.fib_multipath_hash_seed";

/** Sets the multipath hash seed in both netns where this kernel has it (Linux 6.11+). */
export async function sameHashSeed(pod: string, guest: string): Promise<void> {
  if (!existsSync(`/proc/sys/${HASH_SEED.replaceAll(".", "/")}`)) return;
  for (const ns of [pod, guest]) {
    const r = await run("ip", ["netns", "exec", ns, "sysctl", "-qw", `${HASH_SEED}=20220`]);
    if (r.code !== 0) throw new Error(`${HASH_SEED} in ${ns}: ${r.stderr.trim()}`);
  }
}

export async function lookup(ns: string, probe: Probe): Promise<string> {
  const r = await run("ip", ["-n", ns, "-d", "-j", ...probe.args]);
  if (r.code !== 0) return `error: ${r.stderr.trim()}`;
  let answer: Record<string, unknown> | undefined;
  try {
    [answer] = JSON.parse(r.stdout || "[]") as Record<string, unknown>[];
  } catch (err) {
    throw new Error(
      `ip -n ${ns} ${probe.args.join(" ")}: ${(err as Error).message}: ${r.stdout.slice(0, 300)}`,
    );
  }
  if (!answer) return "error: empty answer";
  // IGNORED.lookupKernelLinkLocalSource
  if (typeof answer.prefsrc === "string" && isKernelLinkLocal(answer.prefsrc))
    answer.prefsrc = "(kernel link-local)";
  const keep = ["type", "dev", "gateway", "via", "table", "from", "prefsrc"];
  return keep
    .filter((k) => answer[k] !== undefined)
    .map((k) => `${k} ${typeof answer[k] === "string" ? answer[k] : JSON.stringify(answer[k])}`)
    .join(" ");
}

/** Each link's name to whether it has carrier (LOWER_UP). */
async function carrierByName(ns: string): Promise<Map<string, boolean>> {
  const r = await run("ip", ["-n", ns, "-j", "link", "show"]);
  const links = JSON.parse(r.stdout || "[]") as { ifname: string; flags?: string[] }[];
  return new Map(links.map((l) => [l.ifname, (l.flags ?? []).includes("LOWER_UP")]));
}

/** The answer without its preferred source. */
const withoutSource = (answer: string) => answer.replace(/(^| )prefsrc \S+/, "");

const field = (answer: string, name: string) =>
  new RegExp(`(?:^| )${name} (\\S+)`).exec(answer)?.[1];

/**
 * The entry of the ignore list that explains two answers differing in
 * their source alone (IGNORED.lookupSourceOtherLink,
 * lookupSourceMultipathHop): diff's own judge, given the pod's read.
 */
function sourceExplained(probe: Probe, pod: string, guest: string, read: SourceRead) {
  if (pod.startsWith("error") || withoutSource(pod) !== withoutSource(guest)) return undefined;
  return sourceByOrder(
    {
      to: probe.args[probe.args.indexOf("get") + 1] ?? "",
      input: probe.args.includes("iif"),
      dev: field(pod, "dev") ?? "",
      gateway: field(pod, "gateway"),
      table: field(pod, "table"),
      pod: field(pod, "prefsrc"),
      guest: field(guest, "prefsrc"),
    },
    read,
  );
}

/**
 * Which entry of the ignore list explains two different answers, if one
 * does (IGNORED.lookupLinkLocalAnyLink, lookupCarrierOnly, and the source's).
 */
export function explained(
  probe: Probe,
  pod: string,
  guest: string,
  carrier: { pod: ReadonlyMap<string, boolean>; guest: ReadonlyMap<string, boolean> },
  read?: SourceRead,
): LookupResult["legit"] {
  const source = read && sourceExplained(probe, pod, guest, read);
  if (source) return source;
  const to = probe.args[probe.args.indexOf("get") + 1] ?? "";
  const anyLink = /^(fe[89ab]|ff)/i.test(to) && !probe.args.includes("oif");
  const same = (k: string) => field(pod, k) === field(guest, k);
  if (anyLink && !pod.startsWith("error") && ["type", "table", "via", "gateway"].every(same))
    return "lookupLinkLocalAnyLink";
  for (const [side, answer, other] of [
    ["pod", pod, "guest"],
    ["guest", guest, "pod"],
  ] as const) {
    const dev = field(answer, "dev") ?? "";
    const kernel =
      /^type (multicast|anycast|local) /.test(answer) && field(answer, "table") === "local";
    if (kernel && carrier[side].get(dev) === true && carrier[other].get(dev) === false)
      return "lookupCarrierOnly";
  }
  return undefined;
}

/** The lookups of `probes` in both netns, judged; `podRead` is the pod's complete read. */
export async function runLookups(
  pod: string,
  guest: string,
  probes: Probe[],
  podRead: SourceRead,
): Promise<LookupResult[]> {
  await sameHashSeed(pod, guest);
  const carrier = { pod: await carrierByName(pod), guest: await carrierByName(guest) };
  const out: LookupResult[] = [];
  for (const probe of probes) {
    const a = await lookup(pod, probe);
    const b = await lookup(guest, probe);
    const legit = a === b ? undefined : explained(probe, a, b, carrier, podRead);
    out.push({
      probe,
      pod: a,
      guest: b,
      agree: a === b || legit !== undefined,
      ...(legit ? { legit } : {}),
    });
  }
  return out;
}
