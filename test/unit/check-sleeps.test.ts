/**
 * test/support/check-sleeps.ts, the check test/run.sh makes: which lines
 * are sleeps, and that only a `not a wait:` comment with a reason, on the
 * line or in the comment lines right above it, lets one stand. The cases
 * are text files in test/fixtures/check-sleeps/ (the check reads sources
 * and scripts only, so its own cases do not trip it).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { unexplainedSleeps } from "../support/check-sleeps";

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/check-sleeps/${name}`, import.meta.url), "utf8").trimEnd();
const lines = (text: string) => unexplainedSleeps(text).map((s) => s.line);

describe("unexplainedSleeps", () => {
  it.each(fixture("found.txt").split("\n"))("finds %s", (line) => {
    expect(lines(line)).toEqual([1]);
  });

  it.each(fixture("left.txt").split("\n"))("leaves %s", (line) => {
    expect(lines(line)).toEqual([]);
  });

  it("a name bound to node:timers/promises' setTimeout is a sleep", () => {
    expect(lines(fixture("renamed.txt"))).toEqual([2]);
  });

  it("a `not a wait:` comment with a reason, on the line or right above, explains it", () => {
    expect(lines(fixture("explained.txt"))).toEqual([]);
  });

  it("nothing else does: no reason, another wording, a comment further up, or one for another line", () => {
    expect(lines(fixture("unexplained.txt"))).toEqual([1, 3, 6, 9]);
  });
});
