/**
 * dist/netagent, at its first one-shot `ip` run (ListRoutes reads through
 * one), removes the ip output directory a killed agent left behind (its
 * exit handler never ran under SIGKILL); a live agent's directory stays.
 * (The sweep itself: test/unit/ip-output-sweep.test.ts.)
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { outputDirPrefix } from "../../src/net/iproute/ip-stdout-file";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe("ip output directories", () => {
  it("an agent's first one-shot ip run removes the one a killed agent left, and leaves a live one's", async () => {
    // The killed agent: a PID that has exited.
    const dead = Number(spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" }).stdout.trim());
    // A temporary directory of this test's own: every agent on the machine
    // sweeps the shared one, so another test's agent could take `left` first.
    const tmp = mkdtempSync(join(tmpdir(), "sweep-test-"));
    cleanup.push(() => rmSync(tmp, { recursive: true, force: true }));
    const left = join(tmp, `${outputDirPrefix(dead)}killed`);
    const live = join(tmp, `${outputDirPrefix(process.pid)}live`);
    for (const d of [left, live]) {
      mkdirSync(d);
      cleanup.push(() => rmSync(d, { recursive: true, force: true }));
    }
    writeFileSync(join(left, "7.out"), "[]");
    const ns = await Netns.create("nt-sweep");
    cleanup.push(() => ns.remove());
    const agent: RunningAgent = await startAgent({ netns: ns, env: { TMPDIR: tmp } });
    cleanup.push(() => agent.stop());
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    cleanup.push(() => client.close());
    expect(existsSync(left)).toBe(true);
    await client.unary(AgentService.method.listRoutes, {});
    expect(existsSync(left)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });
});
