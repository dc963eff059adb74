/**
 * One seed, end to end: generate, build (pod, guest, agent), `netagentctl
 * sync --netns POD`, `netagentctl diff --netns POD` (its verdict and exit
 * code), the complete comparison of independent reads of both netns, and
 * the route lookups. Everything it made is removed before it returns.
 */
import { setTimeout as delay } from "node:timers/promises";
import { ctl } from "../host/helpers";
import { itemsOf } from "./aspects";
import { type BuiltPod, buildPod, ipOk } from "./build";
import { compareReads, type Difference } from "./compare";
import { generatePod } from "./generate";
import { type LookupResult, runLookups } from "./lookups";
import { normalise } from "./normalise";
import { makeProbes } from "./probes";
import { readNetns } from "./read";
import { stepText } from "./recipe";

export interface SeedResult {
  seed: number;
  nics: string[];
  /** The pod has a NIC without a MAC (a tun): the agent makes its own, found by name. */
  withoutMac: boolean;
  syncExit: number | null;
  /** sync's first error line, when it failed. */
  syncError?: string;
  diffExit: number | null;
  verdict: string;
  mirrored: boolean;
  /** diff said EQUAL while the complete comparison differs. */
  lie: boolean;
  differences: Difference[];
  /** `agree` counts the `legit` ones: different answers an entry of ignore.ts explains. */
  lookups: { agree: number; legit: number; total: number; disagreeing: LookupResult[] };
  /** Commands this kernel refused (left out of the pod). */
  dropped: { command: string; error: string; tags: string[] }[];
  /** Vocabulary items the pod's read has. */
  had: string[];
}

/** The pod being measured, so a signal handler can remove it. */
export const inFlight: { pod?: BuiltPod } = {};

export async function measureSeed(seed: number, probes: number): Promise<SeedResult> {
  const recipe = generatePod(seed);
  const built = await buildPod(recipe);
  inFlight.pod = built;
  try {
    const addr = `unix://${built.agent?.socket}`;
    const guest = built.guest as string;
    const sync = await ctl(["--addr", addr, "sync", "--netns", built.pod], undefined, 120_000);
    const diff = await ctl(["--addr", addr, "diff", "--netns", built.pod], undefined, 120_000);
    const verdict = /^verdict: (\w+)/m.exec(diff.stdout)?.[1] ?? `none (${firstLine(diff.stderr)})`;
    let podRead = await readNetns(built.pod);
    let differences = compareReads(podRead, await readNetns(guest));
    if (differences.length) {
      // A link's carrier and operstate follow a change with a delay (linkwatch, up to a second):
      // what differs is read again until it is gone, for at most 3 s; the last reading counts.
      for (const end = performance.now() + 3_000; differences.length && performance.now() < end; ) {
        // not a wait: the interval of the bounded wait of this loop
        await delay(100);
        podRead = await readNetns(built.pod);
        differences = compareReads(podRead, await readNetns(guest));
      }
    }
    // An IPv6 address still in DAD has no local route yet: lookups wait for both sides'.
    await dadOver([built.pod, guest]);
    const lookups = await runLookups(built.pod, guest, makeProbes(podRead, seed, probes), podRead);
    const mirrored = differences.length === 0;
    return {
      seed,
      nics: recipe.nics.map((n) => `${n.name}${n.kind === "tun" ? " (tun)" : ""}`),
      withoutMac: recipe.nics.some((n) => !n.mac),
      syncExit: sync.code,
      ...(sync.code === 0 ? {} : { syncError: firstLine(sync.stderr || sync.stdout) }),
      diffExit: diff.code,
      verdict,
      mirrored,
      lie: verdict === "EQUAL" && !mirrored,
      differences,
      lookups: {
        agree: lookups.filter((l) => l.agree).length,
        legit: lookups.filter((l) => l.legit).length,
        total: lookups.length,
        disagreeing: lookups.filter((l) => !l.agree),
      },
      dropped: built.dropped.map((d) => ({
        command: stepText(d.step),
        error: d.error,
        tags: d.step.tags,
      })),
      had: itemsOf(normalise(podRead)),
    };
  } finally {
    inFlight.pod = undefined;
    await built.remove();
  }
}

/** Until no address in these netns is tentative (DAD under way), at most 10 s. */
async function dadOver(namespaces: string[]): Promise<void> {
  const tentative = async (ns: string) =>
    (
      JSON.parse(await ipOk("-n", ns, "-6", "-j", "addr", "show", "tentative")) as {
        addr_info?: unknown[];
      }[]
    ).some((l) => (l.addr_info ?? []).length > 0);
  for (let waited = 0; waited < 10_000; waited += 200) {
    const busy = await Promise.all(namespaces.map(tentative));
    if (!busy.includes(true)) return;
    // not a wait: the interval of a poll bounded at 10 s for no address in DAD
    await delay(200);
  }
}

function firstLine(s: string): string {
  return (s.split("\n").find((l) => l.trim() !== "") ?? "").trim().slice(0, 300);
}
