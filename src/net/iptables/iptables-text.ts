/**
 * The text of iptables-save / iptables-restore, read without running
 * anything: which tables an input names, a save split into its tables, a
 * normal form to compare two rule sets, whether a set holds any rule.
 */

/** The tables iptables knows (xtables and iptables-nft alike). */
const TABLES = ["filter", "nat", "mangle", "raw", "security"] as const;

const BUILTIN_CHAINS = new Set(["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"]);

export interface TableRef {
  name: string;
  /** 1-based line of its `*name` line. */
  line: number;
}

/** The `*table` lines of a restore input, in order (a table named twice appears twice). */
export function tablesIn(text: string): TableRef[] {
  const out: TableRef[] = [];
  text.split("\n").forEach((raw, i) => {
    if (raw.startsWith("*")) out.push({ name: raw.slice(1).trim(), line: i + 1 });
  });
  return out;
}

/**
 * Checks an input before anything runs: no NUL byte (the tools read C
 * strings: the rest of such a line would be silently lost) and only tables
 * iptables knows. Returns the reason, naming the line, or undefined.
 */
export function checkRestoreInput(text: string): string | undefined {
  const nul = text.indexOf("\0");
  if (nul >= 0) return `line ${text.slice(0, nul).split("\n").length}: NUL byte`;
  for (const t of tablesIn(text)) {
    if (!(TABLES as readonly string[]).includes(t.name)) {
      return `line ${t.line}: table ${JSON.stringify(t.name.slice(0, 40))} is not one of ${TABLES.join(", ")}`;
    }
  }
  return undefined;
}

/** A save split into its tables: name -> the block from `*name` to `COMMIT`, comments left out. */
export function splitTables(text: string): Map<string, string> {
  const tables = new Map<string, string>();
  let name: string | undefined;
  let lines: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    if (line.startsWith("*")) {
      name = line.slice(1).trim();
      lines = [line];
    } else if (name !== undefined) {
      lines.push(line);
      if (line.trim() === "COMMIT") {
        tables.set(name, `${lines.join("\n")}\n`);
        name = undefined;
      }
    }
  }
  return tables;
}

/**
 * The input that puts `tables` back as `before` (a save with counters) had
 * them: each one's saved block, or `*name` + `COMMIT` alone for a table that
 * did not exist (iptables-nft then deletes it; legacy leaves it empty).
 */
export function renderSnapshot(
  before: ReadonlyMap<string, string>,
  tables: Iterable<string>,
): string {
  return [...new Set(tables)].map((t) => before.get(t) ?? `*${t}\nCOMMIT\n`).join("");
}

/**
 * A rule set in a form two saves can be compared in: no comments (they carry
 * dates and the backend), no counters, tables in name order, each table's
 * lines in the order the tool printed them (rule order matters).
 */
export function normaliseRules(text: string): string[] {
  const tables = [...splitTables(text)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return tables.flatMap(([, block]) =>
    block
      .trimEnd()
      .split("\n")
      .map((l) =>
        l
          .replace(/^\[\d+:\d+\]\s+/, "")
          .replace(/^(:\S+ \S+) \[\d+:\d+\]$/, "$1")
          .trimEnd(),
      ),
  );
}

/** Whether a save holds anything beyond empty built-in chains with ACCEPT policies. */
export function hasRules(text: string): boolean {
  return normaliseRules(text).some((l) => {
    if (l.startsWith("-")) return true;
    const chain = /^:(\S+) (\S+)/.exec(l);
    return chain !== null && (!BUILTIN_CHAINS.has(chain[1] as string) || chain[2] !== "ACCEPT");
  });
}
