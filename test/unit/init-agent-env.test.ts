/**
 * The guest init starts netagent with a clean environment: the kernel puts
 * every NAME=value word of its command line it does not understand into
 * init's environment, so none of init's may reach the agent. init.sh's
 * run_agent is sourced by busybox sh on this host (not PID 1: it only
 * defines its functions) with a stand-in agent that prints its environment.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp";

const INIT = fileURLToPath(new URL("../../rootfs/init.sh", import.meta.url));
const dir = tempDir();
afterAll(() => dir.remove());

it("passes only PATH and the JIT switch to the agent", () => {
  const out = dir.join("agent-env");
  const r = spawnSync(
    "busybox",
    // A subshell: run_agent execs the agent in place of the shell it runs in.
    ["sh", "-c", '. "$0"; AGENT=$(command -v env); (run_agent "$1" 0)', INIT, out],
    {
      encoding: "utf8",
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        // What `netagent.x NETAGENT_IP_BIN=/tmp/x BUN_OPTIONS=... LD_PRELOAD=...`
        // on the kernel command line would leave in init's environment.
        NETAGENT_IP_BIN: "/tmp/evil-ip",
        BUN_OPTIONS: "--preload /tmp/evil.js",
        BUN_JSC_useJIT: "1",
        LD_PRELOAD: "/tmp/evil.so",
        NODE_OPTIONS: "--require /tmp/evil.js",
      },
    },
  );
  expect(r.status, r.stderr).toBe(0);
  const env = readFileSync(out, "utf8").trim().split("\n").sort();
  expect(env).toEqual(["BUN_JSC_useJIT=0", "PATH=/sbin:/bin:/usr/sbin:/usr/bin"]);
});
