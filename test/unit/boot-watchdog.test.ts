/** How far a boot got, from console transcripts recorded on this machine. */
import { describe, expect, it } from "vitest";
import { bootStage, lastLine } from "../../src/host/vm/boot-watchdog";

// SeaBIOS and iPXE as QEMU 7.2 (Debian 12) prints them on the serial console.
const FIRMWARE =
  "\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16.2-debian-1.16.2-1)\r\n\n\n" +
  "iPXE (http://ipxe.org) 00:01.0 C000 PCI2.10 PnP PMM+1EFCEDE0+1EF0EDE0 C000\r\n" +
  "Press Ctrl-B to configure iPXE (PCI 00:01.0)...\r" +
  " ".repeat(79) +
  "\r\n\n\n";

describe("bootStage", () => {
  it.each([
    ["", "firmware"],
    [FIRMWARE, "firmware"],
    [`${FIRMWARE}Booting from ROM.`, "handed-over"],
    [`${FIRMWARE}Booting from ROM..`, "handed-over"],
    [`${FIRMWARE}Booting from ROM..\r\n  \n`, "handed-over"],
    // A quiet guest: init's first line follows the dots on the same line.
    [`${FIRMWARE}Booting from ROM..init: init.noagent: not starting netagent\r\n`, "guest"],
    // Not quiet: the kernel speaks first.
    [`${FIRMWARE}Booting from ROM..\r\n[    0.000000] Linux version 6.1.0`, "guest"],
    // Another firmware with no hand-over line: init's words still count.
    ["init: netagent started (pid 80, run 1)\r\n", "guest"],
  ])("%j is %s", (transcript, stage) => {
    expect(bootStage(transcript)).toBe(stage);
  });
});

describe("lastLine", () => {
  it("quotes the last non-empty line, cut to 80 characters", () => {
    expect(lastLine(`${FIRMWARE}Booting from ROM..`)).toBe('"Booting from ROM.."');
    expect(lastLine("\r\n \n")).toBe("nothing");
    expect(lastLine(`${"x".repeat(100)}\n`)).toBe(JSON.stringify("x".repeat(80)));
  });
});
