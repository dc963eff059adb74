/**
 * The kernel command line as the kernel splits it (lib/cmdline.c next_arg),
 * one table of cases run through the agent's parser (src/agent/config/kernel-cmdline.ts)
 * and through the guest init's own (rootfs/init.sh cmdline_get/cmdline_flag,
 * sourced by busybox sh on this host: not PID 1, it only defines functions).
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { lastCmdlineParam, parseKernelCmdline } from "../../src/agent/config/kernel-cmdline";
import { tempDir } from "../helpers/tmp";

const INIT = fileURLToPath(new URL("../../rootfs/init.sh", import.meta.url));
const dir = tempDir();
afterAll(() => dir.remove());

/** [cmdline, name, expected: undefined = absent, null = bare, string = value]. */
const CASES: [string, string, string | null | undefined][] = [
  ["", "agent.log", undefined],
  ["agent.log=debug", "agent.log", "debug"],
  ["ro  agent.log=debug\tquiet\n", "agent.log", "debug"],
  ["agent.debug_console", "agent.debug_console", null],
  ["agent.debug_console=0", "agent.debug_console", "0"],
  ["agent.debug_console=", "agent.debug_console", ""],
  // Quotes group words: the whole quoted text is x's value.
  ['x="a agent.debug_console"', "agent.debug_console", undefined],
  ['x="a agent.debug_console" y', "x", "a agent.debug_console"],
  ['x="a agent.log=debug b"', "agent.log", undefined],
  // A quoted value loses its quotes.
  ['agent.server_addr="unix:///a b"', "agent.server_addr", "unix:///a b"],
  // The whole parameter may be quoted.
  ['"agent.log=debug"', "agent.log", "debug"],
  ['"agent.debug_console"', "agent.debug_console", null],
  ['"agent.log=a b" c', "agent.log", "a b"],
  // A quote before the = belongs to the name.
  ['"agent.log"=debug', "agent.log", undefined],
  ['"agent.log"=debug', 'agent.log"', "debug"],
  // Quotes in the middle toggle grouping but stay.
  ['agent.log=de"b u"g', "agent.log", 'de"b u"g'],
  ['agent.log="de"bug', "agent.log", 'de"bug'],
  // An unterminated quote runs to the end.
  ['x="a agent.log=debug', "agent.log", undefined],
  ['x="a agent.log=debug', "x", "a agent.log=debug"],
  // A newline inside quotes is kept; the one /proc/cmdline ends with is not.
  ['x="a\nb"', "x", "a\nb"],
  // Only the first = splits.
  ["agent.server_addr=unix:///a=b", "agent.server_addr", "unix:///a=b"],
  // One at the start of the word does not.
  ["=a=b", "=a", "b"],
  // The last one wins.
  ["agent.log=info agent.log=warn", "agent.log", "warn"],
  ["agent.debug_console agent.debug_console=no", "agent.debug_console", "no"],
  // `--` ends the parameters: the rest is init's argv.
  ["quiet -- agent.debug_console", "agent.debug_console", undefined],
  ["a=-- agent.debug_console", "agent.debug_console", null],
  // Vertical tab, form feed, CR and byte 0xA0 are white space to the kernel.
  ["a\vagent.log=x\fb\rc", "agent.log", "x"],
  ["a\xa0agent.debug_console", "agent.debug_console", null],
  // Look-alikes are other parameters.
  ["xagent.debug_console agent.debug_console_x", "agent.debug_console", undefined],
];

function viaInit(cmdline: string, name: string): string | null | undefined {
  const file = dir.join("cmdline");
  writeFileSync(file, Buffer.from(`${cmdline}\n`, "latin1"));
  const r = spawnSync(
    "busybox",
    ["sh", "-c", '. "$0"; CMDLINE_FILE=$1; cmdline_get "$2"', INIT, file, name],
    { encoding: "latin1" },
  );
  if (r.status === 1) return undefined;
  if (r.status === 2) return null;
  if (r.status !== 0) throw new Error(`cmdline_get exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

function viaAgent(cmdline: string, name: string): string | null | undefined {
  // /proc/cmdline ends with a newline, as the file given to init does.
  const p = lastCmdlineParam(parseKernelCmdline(`${cmdline}\n`), name);
  return p === undefined ? undefined : (p.value ?? null);
}

describe("kernel command line", () => {
  it.each(CASES)("%j: %s is %j (agent)", (cmdline, name, want) => {
    expect(viaAgent(cmdline, name)).toEqual(want);
  });
  it.each(CASES)("%j: %s is %j (init)", (cmdline, name, want) => {
    expect(viaInit(cmdline, name)).toEqual(want);
  });

  it("splits a whole line in order and stops at --", () => {
    expect(parseKernelCmdline('a "b=c d" e= "f" -- g=h')).toEqual([
      { name: "a" },
      { name: "b", value: "c d" },
      { name: "e", value: "" },
      { name: "f" },
    ]);
  });

  it("decodes UTF-8 bytes in values", () => {
    const bytes = Buffer.from("x=é", "utf8").toString("latin1");
    expect(parseKernelCmdline(bytes)).toEqual([{ name: "x", value: "é" }]);
  });
});

describe("init's switches (cmdline_flag)", () => {
  const flag = (cmdline: string, name = "agent.debug_console") => {
    const file = dir.join("cmdline-flag");
    writeFileSync(file, `${cmdline}\n`);
    const r = spawnSync(
      "busybox",
      ["sh", "-c", '. "$0"; CMDLINE_FILE=$1; cmdline_flag "$2"', INIT, file, name],
      { encoding: "utf8" },
    );
    return r.status === 0;
  };
  it.each([
    ["agent.debug_console", true],
    ["agent.debug_console=1", true],
    ["agent.debug_console=yes", true],
    ["agent.debug_console=TRUE", true],
    ["agent.debug_console=on", true],
    ["agent.debug_console=y", true],
    ["agent.debug_console=0", false],
    ["agent.debug_console=false", false],
    ["agent.debug_console=no", false],
    ["agent.debug_console=off", false],
    ["agent.debug_console=", false],
    ["agent.debug_console=yellow", false],
    ["", false],
    ['x="a agent.debug_console"', false],
    ["agent.debug_console agent.debug_console=0", false],
    ["agent.debug_console=0 agent.debug_console", true],
    ["-- agent.debug_console", false],
  ])("%j → %s", (cmdline, on) => {
    expect(flag(cmdline)).toBe(on);
  });
});
