/** The --netns rule (one resolution for check and read) and the terminal escaping helper. */
import { mkdirSync, writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { resolveNetns } from "../../../src/host/pod/netns-arg";
import { escapeControls, terminalSafe } from "../../../src/host/print/safe-text";
import { tempDir } from "../../helpers/tmp";

const dir = tempDir("netagent-netns-arg-");
afterAll(() => dir.remove());

describe("resolveNetns", () => {
  const cwd = dir.join("cwd");
  const run = dir.join("run-netns");
  mkdirSync(`${cwd}/a`, { recursive: true });
  mkdirSync(run, { recursive: true });
  writeFileSync(`${cwd}/a/b`, "");
  writeFileSync(`${run}/pod1`, "");

  it("reads a path with a slash from where it was checked: made absolute once", () => {
    // Before: checked as cwd/a/b, then read as /run/netns/a/b (`ip -n a/b`).
    expect(resolveNetns("a/b", cwd, run)).toBe(`${cwd}/a/b`);
    expect(resolveNetns("./a/../a/b", cwd, run)).toBe(`${cwd}/a/b`);
    expect(resolveNetns(`${cwd}/a/b`, "/", run)).toBe(`${cwd}/a/b`);
  });

  it("keeps a valid bare name as a name under the netns directory", () => {
    expect(resolveNetns("pod1", cwd, run)).toBe("pod1");
  });

  it.each([
    ["..", /invalid name "\.\."/],
    [".", /invalid name "\."/],
    ["pod 1", /invalid name "pod 1"/],
    ["pöd", /invalid name "pöd"/],
    ["a\0b", /NUL/],
    ["pod2", /no network namespace named "pod2" in/],
    ["a/c", /a\/c: no such file/],
  ])("refuses %j", (value, why) => {
    const r = resolveNetns(value, cwd, run);
    expect(typeof r).toBe("object");
    expect((r as { reason: string }).reason).toMatch(why);
  });
});

describe("escapeControls / terminalSafe", () => {
  it.each([
    ["eth0", "eth0"],
    ["a\x1b[31mb", "a\\u001b[31mb"],
    ["a\nb\tc\rd", "a\\u000ab\\u0009c\\u000dd"],
    ["\x00\x7f\u0080\u009b\u009f", "\\u0000\\u007f\\u0080\\u009b\\u009f"],
    ["x\u202ey\u2066z\u200f\u061c\u2028", "x\\u202ey\\u2066z\\u200f\\u061c\\u2028"],
    // Printable non-ASCII stays as it is.
    ["é 中 \u00a0 \u00ff", "é 中 \u00a0 \u00ff"],
  ])("escapeControls(%j) = %j", (input, want) => {
    expect(escapeControls(input)).toBe(want);
  });

  it("terminalSafe keeps newlines, escapes the rest, and JSON stays the same JSON", () => {
    expect(terminalSafe("a\nb\x1bc\n")).toBe("a\nb\\u001bc\n");
    const value = { name: "e\u009b\u202e\x7f\x1b", list: ["\u2066"] };
    const text = terminalSafe(JSON.stringify(value, null, 2));
    expect(text).not.toMatch(/[\u007f-\u009f\u202e\u2066]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});
