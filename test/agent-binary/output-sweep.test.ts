/**
 * dist/netagent, started, removes the ip output directory a killed agent
 * left behind (its exit handler never ran under SIGKILL); a live agent's
 * directory stays. (The sweep itself: test/unit/ip-output-sweep.test.ts.)
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { outputDirPrefix } from "../../src/net/ip-output";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { waitFor } from "../helpers/wait";

const made: string[] = [];
const agents: RunningAgent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("ip output directories", () => {
  it("a starting agent removes the one a killed agent left, and leaves a live one's", async () => {
    // The killed agent: a PID that has exited.
    const dead = Number(spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" }).stdout.trim());
    const left = join(tmpdir(), `${outputDirPrefix(dead)}killed`);
    mkdirSync(left);
    writeFileSync(join(left, "7.out"), "[]");
    const live = join(tmpdir(), `${outputDirPrefix(process.pid)}live`);
    mkdirSync(live);
    made.push(left, live);
    agents.push(await startAgent());
    await waitFor(() => !existsSync(left), { what: `${left} removed` });
    expect(existsSync(live)).toBe(true);
  });
});
