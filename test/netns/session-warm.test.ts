/**
 * The agent's resident `ip -batch` starts after the first answered call, not
 * before the agent serves (on a guest's one vCPU its start would delay the
 * first Check), and without any call a while after listening. The stand-in
 * ip logs every start with its arguments, then execs the real ip.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { SESSION_WARM_AFTER_MS } from "../../src/common/limits";
import { answersCheck, type RunningAgent, startAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

let ns: Netns | undefined;
let agent: RunningAgent | undefined;
let dir: TempDir | undefined;
afterEach(async () => {
  await agent?.stop();
  await ns?.remove();
  dir?.remove();
  ns = agent = dir = undefined;
});

/** A stand-in ip logging "ARGS" per start to its log, then the real ip. */
function loggingIp(): { bin: string; starts: () => string[] } {
  const real = spawnSync("sh", ["-c", "command -v ip"], { encoding: "utf8" }).stdout.trim();
  if (!real) throw new Error("no ip on PATH");
  dir = tempDir("netagent-warm-");
  const bin = dir.join("ip");
  const log = dir.join("ip.log");
  writeFileSync(bin, `#!/bin/sh\necho "$*" >>'${log}'\nexec '${real}' "$@"\n`);
  chmodSync(bin, 0o755);
  const starts = () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").slice(0, -1) : []);
  return { bin, starts };
}

const resident = (starts: string[]) => starts.filter((s) => s.includes("-batch -"));

describe("the resident ip starts after the agent serves", () => {
  it("not before the first answered call; right after it", async () => {
    const ip = loggingIp();
    ns = await Netns.create("nt-warm");
    agent = await startAgent({ netns: ns, ipBin: ip.bin, readyOnSocket: true });
    // Well inside SESSION_WARM_AFTER_MS: only a call may have started it by now.
    // not a wait: a stretch inside SESSION_WARM_AFTER_MS in which no resident ip may start; load only shortens it in effect
    await Bun.sleep(300);
    expect(resident(ip.starts()), "ip started before any call").toEqual([]);
    expect(await answersCheck(agent.socket)).toBe(true);
    await waitFor(() => resident(ip.starts()).length === 1, {
      timeoutMs: SESSION_WARM_AFTER_MS - 500,
      what: "the resident ip after the first answered Check",
    });
  });

  it(`without a call, within ${SESSION_WARM_AFTER_MS} ms of listening`, async () => {
    const ip = loggingIp();
    ns = await Netns.create("nt-warm");
    agent = await startAgent({ netns: ns, ipBin: ip.bin, readyOnSocket: true });
    await waitFor(() => resident(ip.starts()).length === 1, {
      timeoutMs: SESSION_WARM_AFTER_MS + 5000,
      what: "the resident ip with no call",
    });
  });
});
