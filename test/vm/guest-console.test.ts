import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { extractMarked, GuestConsole, markedCommand } from "../../src/host/vm/guest-console";

describe("markedCommand / extractMarked", () => {
  it("never echoes its own markers: only the command's printf prints them", () => {
    const line = markedCommand("ip -json route", 7);
    expect(line).toBe("printf '@@%s\\n' B7; ip -json route; printf '\\n@@%s %s\\n' E7 $?");
    expect(line).not.toContain("@@B7");
    expect(line).not.toContain("@@E7");
  });

  it("cuts the output between the markers, ignoring the echo, prompts and \\r", () => {
    const transcript = [
      "guest# \x1b[6nprintf '@@%s\\n' B7; ip -json route; printf '\\n@@%s %s\\n' E7 $?",
      "@@B7",
      '[{"dst":"default"}]',
      "",
      "@@E7 0",
      "guest# ",
    ].join("\r\n");
    expect(extractMarked(transcript, 7)).toEqual({ status: 0, lines: ['[{"dst":"default"}]'] });
  });

  it("keeps output that had no final newline, and the exit status", () => {
    expect(extractMarked("@@B3\r\nno newline\r\n@@E3 1\r\n", 3)).toEqual({
      status: 1,
      lines: ["no newline"],
    });
  });

  it("waits for the end marker and does not confuse ids", () => {
    expect(extractMarked("@@B1\nhalf", 1)).toBeUndefined();
    expect(extractMarked("@@B1\nx\n@@E12 0\n", 1)).toBeUndefined();
    expect(extractMarked("@@B12\n\n@@E12 0\n", 1)).toBeUndefined();
  });

  it("refuses multi-line commands", () => {
    expect(() => markedCommand("a\nb", 1)).toThrow();
  });
});

/** A fake shell on the other end of the console: answers each marked command. */
function fakeGuest(answer: (command: string) => string) {
  const toGuest = new PassThrough();
  const fromGuest = new PassThrough();
  let buffer = "";
  toGuest.setEncoding("utf8");
  toGuest.on("data", (chunk: string) => {
    buffer += chunk;
    let nl = buffer.indexOf("\n");
    while (nl >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      fromGuest.write(`${line}\r\n`); // tty echo
      const m = /^printf '@@%s\\n' B(\d+); (.*); printf '\\n@@%s %s\\n' E\d+ \$\?$/.exec(line);
      if (m) {
        // A kernel message interleaved before the output, as on a real console.
        fromGuest.write(
          `@@B${m[1]}\r\n[  1.0] virtio_net: hello\r\n${answer(m[2] as string)}\r\n@@E${m[1]} 0\r\nguest# `,
        );
      }
      nl = buffer.indexOf("\n");
    }
  });
  return new GuestConsole(toGuest, fromGuest);
}

describe("GuestConsole", () => {
  it("runs commands one at a time and parses JSON output", async () => {
    const con = fakeGuest((cmd) => (cmd === "ip -json route" ? '[{"dst":"default"}]' : cmd));
    const [a, b] = await Promise.all([con.runJson("ip -json route"), con.run("echo hi")]);
    expect(a).toEqual([{ dst: "default" }]);
    expect(b.lines).toEqual(["[  1.0] virtio_net: hello", "echo hi"]);
  });

  it("times out with the console's tail in the message", async () => {
    const con = new GuestConsole(new PassThrough(), new PassThrough());
    await expect(con.waitFor("never", 20)).rejects.toThrow(/no console output never within 20 ms/);
  });

  it("fails pending waits when closed", async () => {
    const con = new GuestConsole(new PassThrough(), new PassThrough());
    const waiting = con.waitFor("x", 10_000);
    con.close(new Error("qemu exited"));
    await expect(waiting).rejects.toThrow("qemu exited");
  });
});
