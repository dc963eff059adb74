/**
 * runProcess (src/process/run-process.ts) against tiny real executables,
 * sh scripts written to a temp dir: why a process stopped (its exit, its
 * own time limit, the caller's signal, the output cap, a program that
 * cannot start), what it was fed and what environment it saw. Killed
 * processes are checked gone by their PID.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { childEnv, commandArgv, netnsFile } from "../../src/process/command";
import { runProcess } from "../../src/process/run-process";
import { pidAlive } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove();
});

/** An executable sh script with `body`, in its own temp dir; `pidFile` for scripts that record a PID. */
function script(body: string) {
  const dir = tempDir("netagent-proc-");
  dirs.push(dir);
  const bin = dir.join("tool");
  writeFileSync(bin, `#!/bin/sh\n${body}\n`);
  chmodSync(bin, 0o755);
  const pidFile = dir.join("pid");
  return { bin, dir, pidFile, pid: () => Number(readFileSync(pidFile, "utf8")) };
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("runProcess: how a process stopped", () => {
  it("exited: its code, its stdout and stderr", async () => {
    const t = script("echo out; echo err >&2; exit 3");
    const r = await runProcess({ argv: [t.bin], timeoutMs: 10_000 });
    expect(r.stop).toEqual({ kind: "exited", code: 3, signal: null });
    expect(text(r.stdout)).toBe("out\n");
    expect(r.stderr).toBe("err\n");
  });

  it("exited by a signal it did not get from us: the signal named", async () => {
    const t = script("kill -KILL $$");
    const r = await runProcess({ argv: [t.bin], timeoutMs: 10_000 });
    expect(r.stop).toEqual({ kind: "exited", code: 137, signal: "SIGKILL" });
  });

  it("timed-out: killed (SIGKILL) at its own limit and reaped", async () => {
    const s = script("");
    // not a wait: a stand-in that never ends, killed by the code under test
    const t = script(`echo $$ > '${s.pidFile}'\nexec sleep 600`);
    const t0 = performance.now();
    const r = await runProcess({ argv: [t.bin], timeoutMs: 300 });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.stop).toEqual({ kind: "timed-out", ms: 300 });
    expect(pidAlive(s.pid())).toBe(false);
  });

  it("timed-out also when it exited but a child it left holds the pipe", async () => {
    const s = script("");
    // not a wait: a grandchild that outlives its parent, killed by the code under test
    const t = script(`sleep 600 & echo $! > '${s.pidFile}'; exit 0`);
    const r = await runProcess({ argv: [t.bin], timeoutMs: 300 });
    try {
      expect(r.stop).toEqual({ kind: "timed-out", ms: 300 });
    } finally {
      process.kill(s.pid(), "SIGKILL");
    }
  });

  it("aborted: the caller's signal kills it, the result carries the reason", async () => {
    const s = script("");
    // not a wait: a stand-in that never ends, killed by the code under test
    const t = script(`echo $$ > '${s.pidFile}'\nexec sleep 600`);
    const controller = new AbortController();
    const run = runProcess({ argv: [t.bin], timeoutMs: 60_000, signal: controller.signal });
    await waitFor(() => existsSync(s.pidFile) && readFileSync(s.pidFile, "utf8").endsWith("\n"));
    const reason = new Error("caller gone");
    controller.abort(reason);
    const r = await run;
    expect(r.stop).toEqual({ kind: "aborted", reason, started: true });
    expect(r.stop.kind === "aborted" && r.stop.reason).toBe(reason);
    expect(pidAlive(s.pid())).toBe(false);
  });

  it("aborted before the start: nothing is run", async () => {
    const marker = script("").dir.join("ran");
    const t = script(`touch '${marker}'`);
    const controller = new AbortController();
    controller.abort("early");
    const r = await runProcess({ argv: [t.bin], timeoutMs: 10_000, signal: controller.signal });
    expect(r.stop).toEqual({ kind: "aborted", reason: "early", started: false });
    expect(existsSync(marker)).toBe(false);
  });

  it("output-cap: killed once its stdout passes the cap; exactly the cap is the limit", async () => {
    const s = script("");
    const t = script(`echo $$ > '${s.pidFile}'\nexec yes`);
    const r = await runProcess({ argv: [t.bin], timeoutMs: 30_000, maxOutputBytes: 4096 });
    expect(r.stop).toEqual({ kind: "output-cap", bytes: 4096 });
    expect(pidAlive(s.pid())).toBe(false);
    const exact = script("head -c 4096 /dev/zero");
    const ok = await runProcess({ argv: [exact.bin], timeoutMs: 30_000, maxOutputBytes: 4096 });
    expect(ok.stop.kind).toBe("exited");
    expect(ok.stdout.length).toBe(4096);
  });

  it("stderr past its cap is read to the end and dropped: the process still finishes", async () => {
    // 1 MiB is far more than a pipe holds: unread, the script would block.
    const t = script("head -c 1048576 /dev/zero | tr '\\0' e >&2; echo done");
    const r = await runProcess({ argv: [t.bin], timeoutMs: 30_000, maxStderrBytes: 100 });
    expect(r.stop).toEqual({ kind: "exited", code: 0, signal: null });
    expect(r.stderr).toBe("e".repeat(100));
    expect(text(r.stdout)).toBe("done\n");
  });

  it("not-started: a program that is not there", async () => {
    const r = await runProcess({ argv: ["/nonexistent/netagent-tool"], timeoutMs: 10_000 });
    expect(r.stop.kind).toBe("not-started");
    expect(r.stop.kind === "not-started" && r.stop.error.message).toMatch(/ENOENT/);
  });
});

describe("runProcess: what the process is given", () => {
  it("stdin as a string and as bytes; none: stdin is at its end", async () => {
    const cat = script("cat");
    const s = await runProcess({ argv: [cat.bin], stdin: "a\nb\n", timeoutMs: 10_000 });
    expect(text(s.stdout)).toBe("a\nb\n");
    const bytes = new Uint8Array([0, 1, 2, 255]);
    const b = await runProcess({ argv: [cat.bin], stdin: bytes, timeoutMs: 10_000 });
    expect([...b.stdout]).toEqual([0, 1, 2, 255]);
    const none = await runProcess({ argv: [cat.bin], timeoutMs: 10_000 });
    expect(none.stop).toEqual({ kind: "exited", code: 0, signal: null });
    expect(none.stdout.length).toBe(0);
  });

  it("the environment is exactly PATH and LC_ALL=C", async () => {
    // /proc/$$/environ: what the shell was started with, before it adds its own.
    const t = script(`tr '\\0' '\\n' < /proc/$$/environ`);
    const r = await runProcess({ argv: [t.bin], timeoutMs: 10_000 });
    const env = text(r.stdout).trimEnd().split("\n").sort();
    expect(env).toEqual([`LC_ALL=C`, `PATH=${process.env.PATH}`]);
    expect(childEnv()).toEqual({ PATH: process.env.PATH, LC_ALL: "C" });
  });

  it("arguments are passed as they are, without a shell", async () => {
    const t = script(`for a in "$@"; do echo "[$a]"; done`);
    const r = await runProcess({ argv: [t.bin, "a b", "$HOME", ";x"], timeoutMs: 10_000 });
    expect(text(r.stdout)).toBe("[a b]\n[$HOME]\n[;x]\n");
  });

  it("stdoutFile: the output goes to the file, the result's stdout is empty", async () => {
    const t = script("echo to-file");
    const file = t.dir.join("out");
    const r = await runProcess({ argv: [t.bin], timeoutMs: 10_000, stdoutFile: file });
    expect(r.stop.kind).toBe("exited");
    expect(r.stdout.length).toBe(0);
    expect(readFileSync(file, "utf8")).toBe("to-file\n");
  });

  it("a namespace is entered with nsenter, a name as its file under /run/netns", () => {
    expect(commandArgv({ argv: ["ip", "link"] })).toEqual(["ip", "link"]);
    expect(commandArgv({ argv: ["ip", "link"], netns: "/proc/1/ns/net" })).toEqual([
      "nsenter",
      "--net=/proc/1/ns/net",
      "--",
      "ip",
      "link",
    ]);
    expect(commandArgv({ argv: ["sysctl"], netns: "pod" })).toEqual([
      "nsenter",
      "--net=/run/netns/pod",
      "--",
      "sysctl",
    ]);
    expect(netnsFile("pod")).toBe("/run/netns/pod");
    expect(() => commandArgv({ argv: [] })).toThrow(RangeError);
  });
});
