/**
 * integration/kata-image/install.sh puts netagent in front of the Kata agent
 * in an unpacked guest root, both ways a Kata image starts its agent:
 * - as init (AGENT_INIT=yes): the wrapper runs as PID 1 of a fresh PID
 *   and network namespace (unshare), starts netagent and execs the "agent"
 *   (the Go stand-in upstream), which must end up PID 1 and serve behind
 *   netagent; netagent killed is started again;
 * - as a systemd service: the unit and the drop-in pass systemd's own
 *   checker (systemd-analyze verify --root) and are enabled in
 *   kata-containers.target, naming one address on both sides.
 */
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { Code } from "../../src/ttrpc/codes";
import { requireAgentBinary } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";
import { type Child, pidAlive, start, waitForSocket } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { readUpstreamLog } from "../helpers/upstream";
import { waitFor } from "../helpers/wait";

const INSTALL = "integration/kata-image/install.sh";
const cleanup: (() => unknown)[] = [];
let netagent: string;
let standIn: string;

beforeAll(() => {
  netagent = requireAgentBinary();
  standIn = goPrograms()["ttrpc-upstream"];
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function scratch(): TempDir {
  const dir = tempDir("netagent-kata-image-");
  cleanup.push(() => dir.remove());
  return dir;
}

function install(root: string, ...args: string[]) {
  const r = spawnSync("sh", [INSTALL, root, "--netagent", netagent, ...args], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r;
}

/** netagent processes of this machine whose command line names `needle`. */
function netagentPids(needle: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0");
      if (argv[0]?.endsWith("/netagent") && argv.some((a) => a.includes(needle))) pids.push(+p);
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe("agent as init (AGENT_INIT=yes)", () => {
  it("the wrapper starts netagent, execs the agent as PID 1 behind it, and restarts netagent", async () => {
    const dir = scratch();
    const root = dir.join("rootfs");
    mkdirSync(`${root}/sbin`, { recursive: true });
    const log = dir.join("agent.log");
    // The image's agent as osbuilder leaves it: /sbin/init. Here the stand-in,
    // serving where the wrapper tells it (KATA_AGENT_SERVER_ADDR, as the Kata agent reads it).
    writeFileSync(
      `${root}/sbin/init`,
      `#!/bin/sh\nexec ${standIn} -socket "\${KATA_AGENT_SERVER_ADDR#unix://}" -log ${log} -name kata-agent\n`,
      { mode: 0o755 },
    );
    install(root);
    expect(readFileSync(`${root}/usr/bin/kata-agent`, "utf8")).toContain(standIn);
    expect(readFileSync(`${root}/sbin/init`, "utf8")).toContain("netagent-init");
    expect(lstatSync(`${root}/usr/bin/netagent`).mode & 0o777).toBe(0o755);

    const front = dir.join("front.sock");
    const upstream = dir.join("kata-agent.sock");
    const pid1: Child = start(
      "unshare",
      ["--pid", "--fork", "--kill-child", "--mount-proc", "--net", "sh", `${root}/sbin/init`],
      {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        NETAGENT_BIN: `${root}/usr/bin/netagent`,
        NETAGENT_KATA_AGENT: `${root}/usr/bin/kata-agent`,
        NETAGENT_LISTEN: `unix://${front}`,
        NETAGENT_UPSTREAM: `unix://${upstream}`,
      },
    );
    cleanup.push(() => pid1.kill());
    await waitForSocket(pid1, front);

    const steps = await goClient(front, [
      { method: "Check", timeoutMs: 30_000 },
      { service: "grpc.AgentService", method: "ListInterfaces" },
    ]);
    expect(steps[0]?.results?.[0]).toEqual({ code: 0, message: "", payload: "0801" });
    expect(steps[1]?.results?.[0]?.code).toBe(Code.OK);
    const events = readUpstreamLog(log);
    expect(events.find((e) => e.event === "listening")?.pid).toBe(1);
    expect(events.filter((e) => e.event === "request").map((e) => e.method)).toEqual(["Check"]);

    // netagent dies: the wrapper's loop starts it again.
    const [first] = netagentPids(front);
    expect(first).toBeDefined();
    process.kill(first as number, "SIGKILL");
    await waitFor(() => !pidAlive(first as number));
    const again = await waitFor(() => netagentPids(front).find((p) => p !== first), {
      timeoutMs: 20_000,
    });
    expect(again).toBeGreaterThan(0);
    await waitFor(() => existsSync(front));
    const [after] = await waitFor(async () => {
      const r = await goClient(front, [{ method: "Check", timeoutMs: 10_000 }]).catch(() => []);
      return r[0]?.results?.[0]?.code === 0 && r;
    });
    expect(after?.results?.[0]?.payload).toBe("0801");
  });
});

describe("agent as a systemd service", () => {
  it("netagent.service and the agent's drop-in pass systemd-analyze verify, enabled in kata-containers.target", () => {
    const dir = scratch();
    const root = dir.join("rootfs");
    const units = `${root}/usr/lib/systemd/system`;
    mkdirSync(units, { recursive: true });
    // systemd's own targets (this machine's Debian systemd), and a Kata-like agent unit.
    for (const f of readdirSync("/usr/lib/systemd/system").filter((f) => f.endsWith(".target"))) {
      copyFileSync(`/usr/lib/systemd/system/${f}`, `${units}/${f}`);
    }
    mkdirSync(`${root}/usr/bin`, { recursive: true });
    cpSync(standIn, `${root}/usr/bin/kata-agent`);
    writeFileSync(
      `${units}/kata-agent.service`,
      "[Unit]\nDescription=Kata Containers Agent\nWants=kata-containers.target\n\n[Service]\nType=simple\nExecStart=/usr/bin/kata-agent\n",
    );
    writeFileSync(
      `${units}/kata-containers.target`,
      "[Unit]\nDescription=Kata Containers Agent Target\nRequires=basic.target\nRequires=kata-agent.service\nAllowIsolate=yes\n",
    );
    const out = install(root);
    expect(out.stdout).toContain("(systemd)");

    const verify = spawnSync(
      "systemd-analyze",
      [
        "verify",
        `--root=${root}`,
        "netagent.service",
        "kata-agent.service",
        "kata-containers.target",
      ],
      { encoding: "utf8" },
    );
    expect(verify.status, verify.stderr).toBe(0);
    // Warnings (an unknown key, a bad value) are not failures to systemd-analyze: none at all.
    expect(verify.stderr).toBe("");
    const enabled = spawnSync("systemctl", [`--root=${root}`, "is-enabled", "netagent.service"], {
      encoding: "utf8",
    });
    expect(enabled.stdout.trim()).toBe("enabled");

    // One address on both sides: netagent's --upstream is where the drop-in moves the agent.
    const unit = readFileSync(`${units}/netagent.service`, "utf8");
    const dropIn = readFileSync(
      `${root}/etc/systemd/system/kata-agent.service.d/10-netagent.conf`,
      "utf8",
    );
    const upstream = /^ExecStart=\/usr\/bin\/netagent --upstream (\S+)$/m.exec(unit)?.[1];
    expect(upstream).toBe("unix:///run/kata-agent.sock");
    expect(dropIn).toMatch(new RegExp(`^Environment=KATA_AGENT_SERVER_ADDR=${upstream}$`, "m"));
  });

  it("refuses a root with neither kind of agent", () => {
    const dir = scratch();
    mkdirSync(dir.join("rootfs"));
    const r = spawnSync("sh", [INSTALL, dir.join("rootfs"), "--netagent", netagent], {
      encoding: "utf8",
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("neither kata-agent.service nor an agent as /sbin/init");
  });
});
