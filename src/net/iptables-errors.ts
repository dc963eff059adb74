/**
 * The iptables tools' words to status codes (the one table, one test per
 * row), and the line number and words of a failed restore, read from its
 * stderr. Pure.
 */
import { Code } from "../ttrpc/codes";

/** Ordered: the first matching row wins. */
export const IPTABLES_ERROR_TABLE: readonly (readonly [RegExp, Code])[] = [
  [/Permission denied|Operation not permitted|must be root/i, Code.PERMISSION_DENIED],
  // The kernel lacks the table or family (a module not loaded, not built).
  [
    /Table does not exist|do you need to insmod|Protocol not supported|Address family not supported|Could not fetch rule set generation id/i,
    Code.FAILED_PRECONDITION,
  ],
  [/xtables lock|Resource temporarily unavailable|Device or resource busy/i, Code.UNAVAILABLE],
  [/Cannot allocate memory|No buffer space/i, Code.RESOURCE_EXHAUSTED],
  // Anything the tool pins to a line of the input is about the input: a
  // parse error, an unknown match or target, a rule the kernel refuses.
  [/\bline:? \d+|Couldn't load|not valid|invalid|unknown option|Bad /i, Code.INVALID_ARGUMENT],
];

/** The status code for a tool's stderr; INTERNAL when no row matches. */
export function classifyRestoreError(stderr: string): Code {
  for (const [pattern, code] of IPTABLES_ERROR_TABLE) if (pattern.test(stderr)) return code;
  return Code.INTERNAL;
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
