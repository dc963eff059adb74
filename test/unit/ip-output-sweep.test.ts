/**
 * sweepDead: the output directories of agents that are gone (SIGKILLed,
 * their exit handler never ran) are removed at the next agent's first
 * run; nothing else is.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { outputDirPrefix, outputPath, sweepDead } from "../../src/net/iproute/ip-stdout-file";
import { type TempDir, tempDir } from "../helpers/tmp";

let dir: TempDir | undefined;
afterEach(() => dir?.remove());

/** A PID that has just exited (a reused one would only keep its directory). */
function deadPid(): number {
  const r = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" });
  return Number(r.stdout.trim());
}

describe("sweepDead", () => {
  it("removes a dead agent's directory with its files, and leaves the rest", () => {
    dir = tempDir("netagent-sweep-");
    const dead = deadPid();
    const gone = dir.join(`${outputDirPrefix(dead)}aB3xYz`);
    mkdirSync(gone);
    writeFileSync(`${gone}/1.out`, "left by a killed agent");
    const own = dir.join(`${outputDirPrefix(process.pid)}own`);
    const init = dir.join(`${outputDirPrefix(1)}init`);
    const file = dir.join(`${outputDirPrefix(dead)}file`);
    // The same PID in another PID namespace (a container sharing /tmp) is not ours to judge.
    const elsewhere = dir.join(`netagent-ip-1-${dead}-other`);
    const target = dir.join("target");
    const link = dir.join(`${outputDirPrefix(dead)}link`);
    const other = dir.join("netagent-ip-nopid");
    for (const d of [own, init, target, other, elsewhere]) mkdirSync(d);
    writeFileSync(`${target}/keep`, "not ours to remove");
    writeFileSync(file, "");
    symlinkSync(target, link);

    sweepDead(dir.path);

    expect(existsSync(gone)).toBe(false);
    for (const p of [own, init, file, link, target, `${target}/keep`, other, elsewhere]) {
      expect(existsSync(p), p).toBe(true);
    }
  });

  it("does not throw on a parent it cannot read", () => {
    expect(() => sweepDead("/nonexistent/netagent")).not.toThrow();
  });

  it("outputPath makes its directory again when something removed it (a /tmp cleaner)", () => {
    const first = outputPath() as string;
    expect(dirname(first)).toContain(outputDirPrefix(process.pid));
    rmSync(dirname(first), { recursive: true, force: true });
    const next = outputPath() as string;
    expect(existsSync(dirname(next))).toBe(true);
    expect(dirname(next)).toContain(outputDirPrefix(process.pid));
  });
});
