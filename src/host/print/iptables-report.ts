/**
 * The packet filter in netagentctl's words: the lines sync adds to its
 * report, and the section diff adds before its verdict (which then counts
 * the rules' differences too, so it never says EQUAL while they differ).
 */
import type { Comparison } from "../compare/kata-diff";
import type { MirrorReport, RulesComparison } from "../sync/iptables-mirror";

const famName = (f: 4 | 6) => (f === 6 ? "ip6tables" : "iptables");

/** sync's lines for the packet filter. */
export function mirrorLines(report: MirrorReport | { skipped: string }): string[] {
  if ("skipped" in report) return [`  packet filter: ${report.skipped}`];
  if (report.unimplemented) {
    return ["  packet filter: NOT carried: the agent does not implement SetIPTables"];
  }
  return report.families.map((f) =>
    f.skipped
      ? `  packet filter (${famName(f.family)}): ${f.skipped}`
      : `  packet filter (${famName(f.family)}): ${f.sent} rule${f.sent === 1 ? "" : "s"} sent in ${f.tables.join(", ")}`,
  );
}

/** The network comparison with the rules' differences counted in. */
export function withRules(c: Comparison, rules: RulesComparison): Comparison {
  const differences = c.differences + rules.differences;
  return { ...c, differences, equal: differences === 0 };
}

/**
 * Inserts the packet-filter section before the verdict line of diff's text
 * (rendered from {@link withRules}'s comparison); on EQUAL the verdict also
 * counts the rules. Differing lines are listed; equal ones are summed up.
 */
export function addRulesSection(text: string, rules: RulesComparison): string {
  const lines = text.trimEnd().split("\n");
  let verdict = lines.pop() ?? "";
  const out = ["packet filter (iptables-save, no counters)"];
  if (rules.unread) out.push(`~  not compared: ${rules.unread}`);
  for (const f of [4, 6] as const) {
    const mine = rules.rows.filter((r) => r.family === f);
    const same = mine.filter((r) => r.mark === "=");
    const n = same.filter((r) => r.line.startsWith("-A")).length;
    if (rules.unread) continue;
    if (mine.length === 0) out.push(`=  ${famName(f)}: no tables on either side`);
    else if (same.length === mine.length) {
      out.push(`=  ${famName(f)}: ${n} rule${n === 1 ? "" : "s"} equal`);
      continue;
    }
    for (const r of mine) if (r.mark !== "=") out.push(`${r.mark}  ${famName(f)} ${r.line}`);
  }
  if (verdict.startsWith("verdict: EQUAL") && rules.rules > 0) {
    verdict = verdict.replace(
      /\)$/,
      `, ${rules.rules} packet-filter rule${rules.rules === 1 ? "" : "s"})`,
    );
  }
  return `${[...lines, ...out, verdict].join("\n")}\n`;
}
