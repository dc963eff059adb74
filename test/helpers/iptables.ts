/**
 * The packet filter of a test namespace read and written independently of
 * the agent: `ip netns exec NS iptables-save` / `-restore`, run directly.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { normaliseRules } from "../../src/net/iptables/iptables-text";

/** A ruleset from test/fixtures/iptables. */
export function rulesFixture(name: string): string {
  return readFileSync(
    fileURLToPath(new URL(`../fixtures/iptables/${name}`, import.meta.url)),
    "utf8",
  );
}

function tool(name: string, family: 4 | 6): string {
  return `${family === 6 ? "ip6tables" : "iptables"}-${name}`;
}

/** The raw text of `iptables-save` (ip6tables-save) in namespace `ns`. */
export function saveIn(ns: string, family: 4 | 6 = 4): string {
  const r = spawnSync("ip", ["netns", "exec", ns, tool("save", family)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${tool("save", family)} in ${ns}: ${r.stderr}`);
  return r.stdout;
}

/** `iptables-save` in `ns`, normalised (no comments, no counters, tables sorted). */
export function rulesIn(ns: string, family: 4 | 6 = 4): string[] {
  return normaliseRules(saveIn(ns, family));
}

/** Loads `text` with `iptables-restore` in `ns` (the test's own set-up, not the agent's). */
export function restoreIn(ns: string, text: string, family: 4 | 6 = 4): void {
  const r = spawnSync("ip", ["netns", "exec", ns, tool("restore", family)], {
    input: text,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`${tool("restore", family)} in ${ns}: ${r.stderr}`);
}
