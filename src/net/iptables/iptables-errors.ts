/**
 * The iptables tools' words to error kinds (the one table, one test per
 * row; the status a peer sees is the RPC edge's), and the line number and
 * words of a failed restore, read from its stderr. Pure.
 */
import type { NetErrorKind } from "../model/net-error";

/** Ordered: the first matching row wins. */
export const IPTABLES_ERROR_TABLE: readonly (readonly [RegExp, NetErrorKind])[] = [
  [/Permission denied|Operation not permitted|must be root/i, "denied"],
  // The kernel lacks the table or family (a module not loaded, not built).
  [
    /Table does not exist|do you need to insmod|Protocol not supported|Address family not supported|Could not fetch rule set generation id/i,
    "precondition",
  ],
  [/xtables lock|Resource temporarily unavailable|Device or resource busy/i, "unavailable"],
  [/Cannot allocate memory|No buffer space/i, "exhausted"],
  // Anything the tool pins to a line of the input is about the input: a
  // parse error, an unknown match or target, a rule the kernel refuses.
  [/\bline:? \d+|Couldn't load|not valid|invalid|unknown option|Bad /i, "invalid"],
];

/** The kind of a tool's stderr; internal when no row matches. */
export function classifyRestoreError(stderr: string): NetErrorKind {
  for (const [pattern, kind] of IPTABLES_ERROR_TABLE) if (pattern.test(stderr)) return kind;
  return "internal";
}

/** The most of a tool's words an error quotes. */
export const MAX_WORDS = 400;

export interface RestoreFailure {
  /** 1-based line of the input the tool named, when it named one. */
  line: number | undefined;
  /** The tool's own words, without its version banner and help hint. */
  words: string;
}

/**
 * Reads a failed restore's stderr. The tools word it several ways:
 * `Error occurred at line: 7` after the message, `line 7: RULE_APPEND
 * failed (...)`, `line 1 failed`, `COMMIT expected at line 3`.
 */
export function restoreFailure(stderr: string, exitCode: number | null): RestoreFailure {
  const at = /Error occurred at line: (\d+)/.exec(stderr) ?? /\bline (\d+)\b/.exec(stderr);
  const words = stderr
    .split("\n")
    .map((l) =>
      l
        .trim()
        // "iptables-restore v1.8.9 (nf_tables): " and "iptables-restore: ", possibly both.
        .replace(/^(ip6?tables-restore( v[\d.]+)?( \([\w-]+\))?:\s*)+/, "")
        .trim(),
    )
    .filter((l) => l && !/^Error occurred at line:|^Try `/.test(l));
  const text = words.join("; ") || `exited with ${exitCode ?? "a signal"} without a message`;
  return {
    line: at ? Number(at[1]) : undefined,
    // The stderr of a tool fed a hostile input is not quoted whole.
    words: text.length > MAX_WORDS ? `${text.slice(0, MAX_WORDS)}...` : text,
  };
}
