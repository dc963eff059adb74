/** One row of the benchmark table, as printed and as written to dist/bench.json. */
import type { Summary } from "./stats";

export interface Row {
  /** Row number in issue #6 and what is measured. */
  id: string;
  what: string;
  unit: string;
  /** Median of ours (the figure compared); NaN when the row is text only. */
  ours: number;
  /** A row given as text (rows taken from bench/ttrpc's table). */
  text?: string;
  /** Median of the reference, when there is one. */
  reference?: number;
  referenceWhat?: string;
  /** ours / reference (for times and sizes lower is better), unless `ratioNote` says otherwise. */
  ratio?: number;
  ratioNote?: string;
  /** Spread of ours and of the reference. */
  oursStats?: Summary;
  referenceStats?: Summary;
  /** Spread of the per-pair ratios. */
  ratioStats?: Summary;
  goal?: string;
  met?: boolean;
  notes?: string[];
  /** Commands to rerun it by hand. */
  commands: string[];
}

const fmt = (x: number | undefined, digits = 2) =>
  x === undefined || Number.isNaN(x)
    ? "-"
    : Math.abs(x) >= 100
      ? x.toFixed(0)
      : Math.abs(x) >= 10
        ? x.toFixed(1)
        : x.toFixed(digits);

const spread = (s: Summary | undefined) =>
  s ? `${fmt(s.min)} / ${fmt(s.median)} / ${fmt(s.max)}` : "-";

/** The table as markdown. */
export function renderTable(rows: readonly Row[]): string {
  const head = [
    "#",
    "what",
    "unit",
    "ours",
    "reference",
    "ratio",
    "n",
    "ours min/med/max",
    "ref min/med/max",
    "goal",
    "met",
  ];
  const lines = [`| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`];
  for (const r of rows) {
    lines.push(
      `| ${[
        r.id,
        r.what,
        r.unit,
        r.text ?? fmt(r.ours),
        r.reference === undefined ? "-" : `${fmt(r.reference)} (${r.referenceWhat ?? ""})`,
        r.ratio === undefined ? "-" : fmt(r.ratio),
        String(r.oursStats?.n ?? "-"),
        spread(r.oursStats),
        spread(r.referenceStats),
        r.goal ?? "-",
        r.met === undefined ? "-" : r.met ? "yes" : "NO",
      ].join(" | ")} |`,
    );
  }
  return lines.join("\n");
}
