/**
 * startProcess (src/process/start-process.ts), the long-lived children,
 * against tiny real executables: the pipes, the exit, kill by PID, the
 * environment, the Node-stream view the guest console reads.
 */
import { chmodSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { nodeStreams, startProcess } from "../../src/process/start-process";
import { pidAlive } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";

const dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove();
});

function script(body: string): string {
  const dir = tempDir("netagent-proc-");
  dirs.push(dir);
  const bin = dir.join("tool");
  writeFileSync(bin, `#!/bin/sh\n${body}\n`);
  chmodSync(bin, 0o755);
  return bin;
}

describe("startProcess", () => {
  it("pipes both ways; the exit comes once stdin ends", async () => {
    const child = startProcess({
      argv: [script("cat; echo bye >&2; exit 4")],
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(child.pid).toBeGreaterThan(0);
    expect(child.running).toBe(true);
    child.stdin.write("hello\n");
    await child.stdin.end();
    const [out, err, exit] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    expect(out).toBe("hello\n");
    expect(err).toBe("bye\n");
    expect(exit).toEqual({ code: 4, signal: null });
    expect(child.running).toBe(false);
  });

  it("kill() sends SIGTERM by PID (or the signal given); nothing once it has ended", async () => {
    const child = startProcess({
      // not a wait: a stand-in that never ends, killed by the code under test
      argv: [script("exec sleep 600")],
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    });
    expect(child.stdin).toBeUndefined();
    child.kill();
    expect(await child.exited).toEqual({ code: 143, signal: "SIGTERM" });
    expect(pidAlive(child.pid)).toBe(false);
    expect(() => child.kill("SIGKILL")).not.toThrow();
    const other = startProcess({
      // not a wait: a stand-in that never ends, killed by the code under test
      argv: [script("exec sleep 600")],
      stdin: "ignore",
      stdout: "ignore",
      stderr: "ignore",
    });
    other.kill("SIGKILL");
    expect(await other.exited).toEqual({ code: 137, signal: "SIGKILL" });
  });

  it("the environment is exactly PATH and LC_ALL=C; `inherit` passes this process's", async () => {
    const dump = script(`tr '\\0' '\\n' < /proc/$$/environ`);
    const read = async (env?: "inherit") => {
      const child = startProcess({
        argv: [dump],
        stdin: "ignore",
        stdout: "pipe",
        stderr: "ignore",
        ...(env ? { env } : {}),
      });
      const text = await new Response(child.stdout).text();
      await child.exited;
      return text.trimEnd().split("\n").sort();
    };
    expect(await read()).toEqual(["LC_ALL=C", `PATH=${process.env.PATH}`]);
    process.env.NETAGENT_PROCESS_TEST = "inherited";
    try {
      expect(await read("inherit")).toContain("NETAGENT_PROCESS_TEST=inherited");
    } finally {
      delete process.env.NETAGENT_PROCESS_TEST;
    }
  });

  it("throws, naming the cause, when the program cannot be executed", () => {
    expect(() =>
      startProcess({
        argv: ["/nonexistent/netagent-tool"],
        stdin: "ignore",
        stdout: "ignore",
        stderr: "ignore",
      }),
    ).toThrow(/ENOENT/);
  });

  it("nodeStreams: the same pipes as Node streams (the guest console's view)", async () => {
    const child = startProcess({
      argv: [script("cat")],
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const { stdin, stdout } = nodeStreams(child);
    let seen = "";
    stdout.setEncoding("utf8");
    const got = new Promise<void>((resolve) => {
      stdout.on("data", (chunk: string) => {
        seen += chunk;
        if (seen.includes("\n")) resolve();
      });
    });
    stdin.write("typed\n");
    await got;
    expect(seen).toBe("typed\n");
    stdin.end();
    expect(await child.exited).toEqual({ code: 0, signal: null });
    // A write after the child is gone fails quietly (the exit says why).
    expect(() => stdin.write("late\n")).not.toThrow();
  });
});
