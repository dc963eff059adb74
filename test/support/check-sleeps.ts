/**
 * No test waits by sleeping: a fixed sleep passes or fails by the machine's
 * load, so every wait in test/ is a bounded wait on its condition
 * (test/helpers/wait.ts). A sleep that is no wait (a stand-in that hangs
 * on purpose, the interval of a poll, a pause a test measures) says so in a
 * comment holding `not a wait:` and why, on its own line or in the comment
 * lines right above it. `bun test/support/check-sleeps.ts` (test/run.sh)
 * lists every sleep in test/ without one and exits 1 if there is any.
 *
 * A sleep is: Bun.sleep / Bun.sleepSync; a setTimeout that is not kept to
 * be cleared (a kept timer is a deadline, not a wait); a call of a name
 * bound to node:timers/promises' setTimeout, or of a helper named sleep or
 * delay; Go's time.Sleep / time.After; a shell `sleep N` (in a script or in
 * a string a test runs), and `"sleep", "N"` as a program to run.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/** The marker, and at least three words after it. */
const EXPLAINED = /not a wait: *\S+\s+\S+\s+\S+/;

const PATTERNS: RegExp[] = [
  /\bBun\.sleep(Sync)?\(/,
  /(?<!=\s*)(?<![\w.])setTimeout\(/,
  /(^|[^.\w])(sleep|delay)\(/,
  /\btime\.(Sleep|After)\(/,
  /(^|[^\w.-])sleep +[0-9$]/,
  /["']sleep["'],\s*\[?\s*["'][0-9]/,
];

/** A line that is only a comment (or part of a block comment). */
const COMMENT_LINE = /^\s*(\/\/|#|\/\*|\*)/;

export interface UnexplainedSleep {
  line: number;
  text: string;
}

/** The sleeps of one file's text that no `not a wait:` comment explains. */
export function unexplainedSleeps(text: string): UnexplainedSleep[] {
  const lines = text.split("\n");
  const renamed = [...text.matchAll(/setTimeout as (\w+)\s*\}\s*from\s*["']node:timers\/promises/g)]
    .map((m) => m[1])
    .filter((n) => n !== undefined && n !== "sleep" && n !== "delay");
  const patterns = [...PATTERNS, ...renamed.map((n) => new RegExp(`(^|[^.\\w])${n}\\(`))];
  const out: UnexplainedSleep[] = [];
  lines.forEach((line, i) => {
    if (COMMENT_LINE.test(line) || !patterns.some((p) => p.test(line))) return;
    if (EXPLAINED.test(line)) return;
    // The comment lines right above it (a block, up to the first code line).
    for (let k = i - 1; k >= 0 && COMMENT_LINE.test(lines[k] ?? ""); k--) {
      if (EXPLAINED.test(lines[k] ?? "")) return;
    }
    out.push({ line: i + 1, text: line.trim() });
  });
  return out;
}

const SOURCE = /\.(ts|js|mjs|sh|go)$/;

/** Every file of `dir` a sleep could hide in: sources and scripts (a `#!` first line). */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) {
      if (name !== "node_modules" && name !== "bin") out.push(...sourceFiles(path));
    } else if (SOURCE.test(name) || readFileSync(path, "latin1").startsWith("#!")) {
      out.push(path);
    }
  }
  return out;
}

if (import.meta.main) {
  const root = join(import.meta.dir, "..");
  const problems = sourceFiles(root).flatMap((f) =>
    unexplainedSleeps(readFileSync(f, "utf8")).map(
      (s) => `test/${relative(root, f)}:${s.line}: ${s.text}`,
    ),
  );
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(
      `${problems.length} sleep(s) in test/ without a "not a wait: why" comment: wait for the condition instead (test/helpers/wait.ts), or say why it is no wait`,
    );
    process.exit(1);
  }
  console.log("check-sleeps: every sleep in test/ says why it is no wait");
}
