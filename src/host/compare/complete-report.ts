/**
 * The complete comparison in diff's words: a finding of complete-diff.ts
 * as a "not mirrored: ..." row, the probes' disagreements as rows, the
 * sections diff inserts before its verdict line (which then counts them),
 * and the list of what legitimately differs for diff's help. Pure; the
 * renderer escapes every cell.
 */
import type { Decision } from "../../net/iproute/ip-lookups";
import { escapeControls } from "../print/safe-text";
import type { Finding } from "./complete-diff";
import type { Row } from "./kata-diff";
import { decisionWords } from "./lookup-compare";
import { MIRROR_DIFFERENCES } from "./mirror-differences";
import { type UsableWait, waitedWords } from "./usable-addresses";

interface ProbeResult {
  lookup: string;
  pod: Decision;
  guest: Decision;
}

export interface ProbesOutcome {
  asked: number;
  disagreements: ProbeResult[];
  /** When some disagree: addresses of either side still tentative (complete-compare.ts). */
  tentative?: string[];
  /** Lookups that differ in the source alone, through a link without an address of theirs (source-order.ts): not counted. */
  sourceOnly?: ProbeResult[];
}

export function findingRow(f: Finding): Row {
  const say = `not mirrored: ${f.what}`;
  if (f.kind === "sysctl") {
    const key = f.what.replace(/^sysctl /, "");
    return {
      mark: f.field === "value" ? "~" : f.field === "pod only" ? "<" : ">",
      pod: f.pod === "-" ? `${say} (the pod has no such file)` : `${say} = ${f.pod}`,
      guest: f.guest === "-" ? "-" : `${key} = ${f.guest}`,
    };
  }
  switch (f.field) {
    case "pod only":
      return { mark: "<", pod: `${say} {${f.pod}}`, guest: "-" };
    case "guest only":
      return { mark: ">", pod: `${say} (guest only)`, guest: `{${f.guest}}` };
    case "order":
      return { mark: "~", pod: `${say} in this order: ${f.pod}`, guest: f.guest };
    default:
      return { mark: "~", pod: `${say}: ${f.field} ${f.pod}`, guest: `${f.field} ${f.guest}` };
  }
}

export interface Section {
  title: string;
  rows: Row[];
}

export function completeSection(findings: readonly Finding[]): Section {
  return {
    title: "complete reads (everything ip -d -j and /proc/sys/net show)",
    rows:
      findings.length === 0
        ? [
            {
              mark: "=",
              pod: "equal, but for what legitimately differs (see diff --help)",
              guest: "",
            },
          ]
        : findings.map(findingRow),
  };
}

/** What carrier alone explains (MIRROR_DIFFERENCES.routeCarrierOnly): named, not counted. */
export function carrierSection(findings: readonly Finding[]): Section {
  return {
    title:
      "differs by carrier alone (the wire's, which no agent can mirror; not counted: see diff --help)",
    rows: findings.map((f) => {
      const row = findingRow(f);
      return { ...row, pod: row.pod.replace(/^not mirrored: /, "carrier: ") };
    }),
  };
}

/**
 * The lookups that can differ in their source (MIRROR_DIFFERENCES
 * .lookupSourceOtherLink, .lookupSourceMultipathHop): the pod's links that
 * make them, and those of the probes that did. Named, not counted.
 */
export function sourceOrderSection(notes: readonly string[], p?: ProbesOutcome): Section {
  return {
    title:
      "lookups that can differ in their source (the order of links, a multipath hop's own; not counted: see diff --help)",
    rows: [
      ...notes.map((n) => ({ mark: "=" as const, pod: n, guest: "" })),
      ...(p?.sourceOnly ?? []).map((d) => ({
        mark: "~" as const,
        pod: `${d.lookup}: ${decisionWords(d.pod)}`,
        guest: decisionWords(d.guest),
      })),
    ],
  };
}

export function probesSection(p: ProbesOutcome): Section {
  const agree = p.asked - p.disagreements.length;
  const title = `route lookups (${p.asked} drawn from the pod's routes and rules; ${agree} agree)`;
  if (p.disagreements.length === 0) {
    return {
      title,
      rows: [{ mark: "=", pod: `all ${p.asked} decide the same in pod and guest`, guest: "" }],
    };
  }
  // An address in duplicate address detection is no source yet: said, as it passes.
  const tentative = p.tentative ?? [];
  const why = tentative.length
    ? `; still tentative (duplicate address detection, about a second after its link came up, no source until then): ${tentative.join(", ")}`
    : "";
  return {
    title: `${title}${why}`,
    rows: p.disagreements.map((d) => ({
      mark: "~",
      pod: `${d.lookup}: ${decisionWords(d.pod)}`,
      guest: decisionWords(d.guest),
    })),
  };
}

/**
 * The guest's addresses the pod can use, when diff waited for them or
 * some are still tentative (usable-addresses.ts); undefined otherwise.
 * Each still tentative is a difference.
 */
export function usableSection(w: UsableWait): Section | undefined {
  const title = waitedWords(w) ?? "guest addresses still tentative where the pod's are usable";
  if (w.waitedFor.length === 0 && w.still.length === 0) return undefined;
  if (w.still.length === 0)
    return {
      title,
      rows: [{ mark: "=", pod: "every address the pod can use, the guest can use", guest: "" }],
    };
  return {
    title,
    rows: w.still.map((u) => ({
      mark: "~",
      pod: `still tentative: ${u.address} on ${u.link} (the pod's is usable)`,
      guest: u.dadFailed ? "tentative dadfailed" : "tentative",
    })),
  };
}

/** Inserts `sections` before the verdict line (the last) of diff's text, in its two columns. */
export function addSections(text: string, sections: readonly Section[]): string {
  const lines = text.trimEnd().split("\n");
  const verdict = lines.pop() ?? "";
  // The guest column starts where the header's GUEST title does.
  const column = lines[0]?.lastIndexOf("  GUEST (") ?? -1;
  const width = column > 3 ? column - 3 : 10;
  const cell = (mark: string, l: string, r: string) =>
    `${mark}  ${escapeControls(l).padEnd(width)}  ${escapeControls(r)}`.trimEnd();
  for (const s of sections) {
    lines.push(escapeControls(s.title));
    for (const r of s.rows) lines.push(cell(r.mark, r.pod, r.guest));
  }
  return `${[...lines, verdict].join("\n")}\n`;
}

/** The list for diff's help: what and why, one entry a paragraph. */
export function mirrorDifferencesHelp(): string {
  return Object.values(MIRROR_DIFFERENCES)
    .map((d) => `  - ${d.kind}: ${d.what}: ${d.why}.`)
    .join("\n");
}
