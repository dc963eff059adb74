/**
 * The runner's words: one line per seed (with its first differences), and
 * the totals: seeds, mirrored exactly, lies, sync failures, lookups
 * agreeing, the vocabulary items lost most often (pods that lost it / pods
 * that had it), the commands this kernel refused, and the replay command of
 * every seed that was not mirrored.
 */
import type { SeedResult } from "./measure";

export interface Totals {
  seeds: number;
  mirrored: number;
  lies: number;
  honestDifferent: number;
  /** diff said DIFFERENT while the complete comparison found nothing. */
  falseAlarms: number;
  syncFailures: number;
  /** Pods with a NIC without MAC (a tun: the agent makes it, found by name). */
  withoutMac: number;
  lookupsAgree: number;
  /** Of lookupsAgree, different answers an entry of ignore.ts explains. */
  lookupsLegit: number;
  lookups: number;
  /**
   * Per vocabulary item: pods that had it and pods where it differed, over
   * all pods and over the pods whose sync completed (there a loss is what
   * sync did not carry, not the fallout of a failed sync).
   */
  items: { item: string; lost: number; had: number; lostSynced: number; hadSynced: number }[];
  /** Differences about items the pod does not have (the guest has more). */
  extra: { item: string; pods: number }[];
  dropped: { item: string; count: number; example: string }[];
  syncErrors: { error: string; count: number }[];
  replay: string[];
}

export function seedLine(r: SeedResult, shown = 3): string {
  const head = [
    `seed ${r.seed}:`,
    `nics ${r.nics.join(",")};`,
    `sync exit ${r.syncExit};`,
    `diff ${r.verdict} (exit ${r.diffExit});`,
    `mirrored ${r.mirrored ? "yes" : `no (${r.differences.length} differences)`};`,
    r.lie ? "LIE;" : "",
    `lookups ${r.lookups.agree}/${r.lookups.total}`,
    r.dropped.length ? `; ${r.dropped.length} commands refused by this kernel` : "",
  ]
    .filter(Boolean)
    .join(" ");
  const lines = [head];
  if (r.syncError) lines.push(`    sync: ${r.syncError}`);
  for (const d of r.differences.slice(0, shown)) lines.push(`    ${d.text.slice(0, 240)}`);
  for (const l of r.lookups.disagreeing.slice(0, 2)) {
    lines.push(`    lookup ${l.probe.args.slice(2).join(" ")}: pod ${l.pod}; guest ${l.guest}`);
  }
  return lines.join("\n");
}

export function totals(results: SeedResult[]): Totals {
  const had = new Map<string, number>();
  const lost = new Map<string, number>();
  const hadSynced = new Map<string, number>();
  const lostSynced = new Map<string, number>();
  const extra = new Map<string, number>();
  const dropped = new Map<string, { count: number; example: string }>();
  const syncErrors = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const r of results) {
    const synced = r.syncExit === 0;
    for (const a of r.had) {
      bump(had, a);
      if (synced) bump(hadSynced, a);
    }
    const hadHere = new Set(r.had);
    if (synced)
      for (const a of new Set(r.differences.flatMap((d) => d.aspects)))
        if (hadHere.has(a)) bump(lostSynced, a);
    for (const a of new Set(r.differences.flatMap((d) => d.aspects)))
      bump(hadHere.has(a) ? lost : extra, a);
    for (const d of r.dropped) {
      const key = `${d.tags.join(", ")}: ${d.error}`;
      dropped.set(key, { count: (dropped.get(key)?.count ?? 0) + 1, example: d.command });
    }
    if (r.syncError) bump(syncErrors, errorKind(r.syncError));
  }
  const sorted = <T extends { [k: string]: unknown }>(xs: T[], by: (x: T) => number) =>
    xs.sort((a, b) => by(b) - by(a));
  return {
    seeds: results.length,
    mirrored: results.filter((r) => r.mirrored).length,
    lies: results.filter((r) => r.lie).length,
    honestDifferent: results.filter((r) => !r.mirrored && r.verdict === "DIFFERENT").length,
    falseAlarms: results.filter((r) => r.mirrored && r.verdict !== "EQUAL").length,
    syncFailures: results.filter((r) => r.syncExit !== 0).length,
    withoutMac: results.filter((r) => r.withoutMac).length,
    lookupsAgree: results.reduce((s, r) => s + r.lookups.agree, 0),
    lookupsLegit: results.reduce((s, r) => s + (r.lookups.legit ?? 0), 0),
    lookups: results.reduce((s, r) => s + r.lookups.total, 0),
    items: sorted(
      [...had]
        .map(([item, h]) => ({
          item,
          had: h,
          lost: lost.get(item) ?? 0,
          hadSynced: hadSynced.get(item) ?? 0,
          lostSynced: lostSynced.get(item) ?? 0,
        }))
        .filter((x) => x.lost > 0),
      (x) => x.lostSynced * 1e6 + x.lost * 1000 + x.lost / x.had,
    ),
    extra: sorted(
      [...extra].map(([item, pods]) => ({ item, pods })),
      (x) => x.pods,
    ),
    dropped: sorted(
      [...dropped].map(([item, v]) => ({ item, ...v })),
      (x) => x.count,
    ),
    syncErrors: sorted(
      [...syncErrors].map(([error, count]) => ({ error, count })),
      (x) => x.count,
    ),
    replay: results
      .filter((r) => !r.mirrored || r.lookups.agree < r.lookups.total)
      .map((r) => `npx bun test/podgen/run.ts --seeds 1 --from ${r.seed}`),
  };
}

/** A sync error without what varies between pods (indexes, priorities, addresses, names). */
function errorKind(e: string): string {
  return e
    .replace(/\[\d+\]/g, "[N]")
    .replace(/(priority|metric|scope) \d+/g, "$1 N")
    .replace(
      /\b(?:[0-9a-f]{0,4}:){2,}[0-9a-f]{0,4}(?:\/\d+)?|\b\d+\.\d+\.\d+\.\d+(?:\/\d+)?/gi,
      "ADDR",
    )
    .replace(/dev \S+/g, "dev NIC");
}

export function totalsText(t: Totals): string {
  const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(1)}%` : "-");
  const out = [
    "",
    `seeds ${t.seeds}; mirrored exactly ${t.mirrored} (${pct(t.mirrored, t.seeds)}); LIES ${t.lies} (diff EQUAL, complete comparison differs); honest DIFFERENT ${t.honestDifferent}; false alarms ${t.falseAlarms}; sync failures ${t.syncFailures}; pods with a NIC without MAC ${t.withoutMac}; lookups agreeing ${t.lookupsAgree}/${t.lookups} (${pct(t.lookupsAgree, t.lookups)}; of them ${t.lookupsLegit} different as an entry of ignore.ts explains)`,
    "",
    "vocabulary items that differed (pods that lost it / pods that had it; first where sync completed, then all):",
    ...t.items.map(
      (x) =>
        `  ${`${x.lostSynced}/${x.hadSynced}`.padStart(7)}  ${`${x.lost}/${x.had}`.padStart(7)}  ${x.item}`,
    ),
  ];
  if (t.extra.length)
    out.push(
      "",
      "differences about what the pod does not have (pods):",
      ...t.extra.map((x) => `  ${String(x.pods).padStart(3)} ${x.item}`),
    );
  if (t.syncErrors.length)
    out.push(
      "",
      "sync errors:",
      ...t.syncErrors.map((x) => `  ${String(x.count).padStart(3)} ${x.error}`),
    );
  if (t.dropped.length) {
    out.push(
      "",
      "commands this kernel refused (left out of the pods):",
      ...t.dropped.map((x) => `  ${String(x.count).padStart(3)} ${x.item} (e.g. ${x.example})`),
    );
  }
  if (t.replay.length) out.push("", "replay:", ...t.replay.map((c) => `  ${c}`));
  return out.join("\n");
}
