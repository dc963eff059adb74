/**
 * awaitOrphans (after a crash): the processes a dead agent left in its process
 * group are waited for, bounded, then killed by PID; processes that end by
 * themselves within the wait are not signalled; nothing outside the group
 * is touched. Real processes: a shell leading its own group (setsid), its
 * children left behind when it is killed.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { awaitOrphans } from "../../src/agent/journal/orphans";
import { processesInGroup, readProcStat } from "../../src/agent/journal/proc-stat";
import { createLogger } from "../../src/common/log";
import { waitFor } from "../helpers/wait";

const log = createLogger("error", () => {});

/** A shell in a group of its own with two children running `script`, then the shell killed. */
async function leaveOrphans(script: string) {
  const sh = spawn("setsid", ["sh", "-c", `${script} & ${script} & wait`], { stdio: "ignore" });
  const pid = sh.pid as number;
  // The children count once they run the script, not while they are still forked shells.
  await waitFor(
    () =>
      processesInGroup(pid).length === 3 &&
      processesInGroup(pid).filter((p) => p.pid !== pid && p.comm === script.split(" ")[0])
        .length === 2,
    { what: "the shell and its children running the script" },
  );
  const start = readProcStat(pid)?.start as number;
  // not a wait: a process of the test's own that must be left alone, killed by the test
  const outsider = spawn("sleep", ["30"], { stdio: "ignore" });
  process.kill(pid, "SIGKILL");
  await waitFor(() => processesInGroup(pid).every((p) => p.pid !== pid || p.state === "Z"));
  return { owner: { pid, start, pgid: pid }, outsider };
}

describe("awaitOrphans", () => {
  it("kills what is still running after the wait, by PID, and only that group", async () => {
    // not a wait: processes for the dead agent's group to leave behind, killed by the code under test
    const { owner, outsider } = await leaveOrphans("sleep 30");
    const t0 = performance.now();
    const report = await awaitOrphans(owner, log, 300);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(report.found.map((p) => p.comm)).toEqual(["sleep", "sleep"]);
    expect(report.killed).toHaveLength(2);
    expect(processesInGroup(owner.pid).filter((p) => p.state !== "Z")).toEqual([]);
    expect(readProcStat(outsider.pid as number)?.state).not.toBe("Z");
    outsider.kill("SIGKILL");
  });

  it("waits for processes that end by themselves, and kills none", async () => {
    // not a wait: processes for the dead agent's group to leave behind; these end by themselves within the wait
    const { owner, outsider } = await leaveOrphans("sleep 2");
    outsider.kill("SIGKILL");
    const report = await awaitOrphans(owner, log, 5000);
    expect(report.found).toHaveLength(2);
    expect(report.killed).toEqual([]);
  });

  it("a record without a process group: nothing to wait for, nothing killed", async () => {
    expect(await awaitOrphans({ pid: 1, start: 0 }, log, 100)).toEqual({ found: [], killed: [] });
  });
});
