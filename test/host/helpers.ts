/**
 * What the host-side namespace tests share: running dist/netagentctl, a
 * pod wired by the real CNI ptp plugin from a private host netns, a guest
 * netns with an agent, and `ip -json` snapshots for before/after checks.
 * Every namespace is named uniquely and removed by the caller's cleanup.
 */
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type RunningAgent, type StartAgentOptions, startAgent } from "../helpers/agent";
import { Netns, randomMac } from "../helpers/netns";
import { type Child, start } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

export const NETAGENTCTL = fileURLToPath(new URL("../../dist/netagentctl", import.meta.url));
export const CNI_PATH = "/usr/lib/cni";

export interface CtlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs dist/netagentctl with `args` (stdin from `input` when given). */
export function ctl(
  args: readonly string[],
  input?: string,
  timeoutMs = 60_000,
): Promise<CtlResult> {
  if (!existsSync(NETAGENTCTL)) throw new Error(`${NETAGENTCTL} missing: run \`npm run build\``);
  return runWithInput(NETAGENTCTL, args, input, timeoutMs);
}

/** Starts dist/netagentctl without waiting (for the late hot-plug test). */
export function startCtl(args: readonly string[]): Child {
  return start(NETAGENTCTL, args);
}

function runWithInput(
  file: string,
  args: readonly string[],
  input: string | undefined,
  timeoutMs: number,
): Promise<CtlResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(file, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
    });
    p.stderr.setEncoding("utf8").on("data", (s: string) => {
      stderr += s;
    });
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`${file} ${args.join(" ")}: timed out\n${stderr}`));
    }, timeoutMs);
    p.once("error", reject);
    p.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A child that exits before reading its input fails this write (EPIPE); its exit
    // status and stderr, resolved above, say why.
    p.stdin.on("error", () => {});
    p.stdin.end(input ?? "");
  });
}

/** A pod netns wired by CNI ptp + host-local, run inside its own private host netns. */
export class PtpPod {
  result: Record<string, unknown> = {};

  private constructor(
    readonly host: Netns,
    readonly pod: Netns,
    private readonly dir: TempDir,
    private readonly conf: string,
  ) {}

  static async create(subnet = "10.248.246.144/28"): Promise<PtpPod> {
    const host = await Netns.create("nh5h");
    const pod = await Netns.create("nh5p");
    const dir = tempDir("netagent-ptp-");
    const conf = JSON.stringify({
      cniVersion: "1.0.0",
      name: "t",
      type: "ptp",
      ipMasq: false,
      ipam: {
        type: "host-local",
        subnet,
        routes: [{ dst: "0.0.0.0/0" }],
        dataDir: dir.join("ipam"),
      },
    });
    const p = new PtpPod(host, pod, dir, conf);
    const r = await p.cni("ADD");
    if (r.code !== 0) {
      await p.remove();
      throw new Error(`ptp ADD failed (${r.code}): ${r.stdout}${r.stderr}`);
    }
    p.result = JSON.parse(r.stdout);
    // sync copies the IPv6 link-local address, which comes once the veth has carrier, and
    // the kernel changes the pod by itself until its duplicate detection ends (the address
    // loses `tentative`, its `local` route appears in table local): a test that counts a
    // follower's calls must not meet that change as the pod's own.
    await waitFor(() => p.pod.linkLocalSettled("eth0"), {
      what: "the pod's IPv6 link-local address, out of detection",
    });
    return p;
  }

  private cni(command: "ADD" | "DEL"): Promise<CtlResult> {
    return runWithInput(
      "ip",
      [
        "netns",
        "exec",
        this.host.name,
        "env",
        `CNI_COMMAND=${command}`,
        `CNI_CONTAINERID=t-${this.pod.name}`,
        `CNI_NETNS=/run/netns/${this.pod.name}`,
        "CNI_IFNAME=eth0",
        `CNI_PATH=${CNI_PATH}`,
        `${CNI_PATH}/ptp`,
      ],
      this.conf,
      30_000,
    );
  }

  async mac(): Promise<string> {
    const [link] = await this.pod.json<{ address: string }[]>("link", "show", "eth0");
    return link?.address as string;
  }

  async addresses(): Promise<string[]> {
    const [link] = await this.pod.json<{ addr_info: { local: string; prefixlen: number }[] }[]>(
      "addr",
      "show",
      "eth0",
    );
    return (link?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`);
  }

  async remove(): Promise<void> {
    try {
      await this.cni("DEL");
    } finally {
      await this.pod.remove();
      await this.host.remove();
      this.dir.remove();
    }
  }
}

/**
 * A guest netns: a veth `guestIf` with `mac`, and dist/netagent on a unix
 * socket. A guest NIC's peer lives outside the guest, in a wire netns of
 * its own (as a VM's NIC has its other end in the VMM): the guest holds
 * no link the pod lacks, which a complete comparison would see.
 */
export class Guest {
  private wire: Netns | undefined;

  private constructor(
    readonly ns: Netns,
    readonly agent: RunningAgent,
  ) {}

  get addr(): string {
    return `unix://${this.agent.socket}`;
  }

  /**
   * `agent`: more flags for the agent (e.g. `--upstream`, front mode), or
   * the agent's start options (e.g. a launcher); it runs in the guest netns.
   */
  static async create(
    mac?: string,
    guestIf = "gst0",
    agent: readonly string[] | Omit<StartAgentOptions, "netns"> = [],
  ): Promise<Guest> {
    const ns = await Netns.create("nh5g");
    let wire: Netns | undefined;
    try {
      // The NIC first, with its carrier and link-local address, as a VM's is at boot:
      // nothing about it changes by itself once the agent serves.
      if (mac) wire = await nicIn(ns, guestIf, mac);
      const options = isArgs(agent) ? { args: agent } : agent;
      const guest = new Guest(ns, await startAgent({ ...options, netns: ns }));
      guest.wire = wire;
      return guest;
    } catch (err) {
      await ns.remove();
      await wire?.remove();
      throw err;
    }
  }

  /** A NIC `name` with `mac` in the guest, up with carrier, its peer up in the guest's wire netns. */
  async addNic(name: string, mac: string): Promise<void> {
    this.wire = await nicIn(this.ns, name, mac, this.wire);
  }

  async remove(): Promise<void> {
    try {
      await this.agent.stop();
    } finally {
      await this.ns.remove();
      await this.wire?.remove();
    }
  }
}

function isArgs(a: readonly string[] | object): a is readonly string[] {
  return Array.isArray(a);
}

/**
 * A veth `name` with `mac` in `ns`, its peer in `wire` (made when not
 * given); both up, and back once `name` has carrier and its IPv6
 * link-local address. Answers the wire netns.
 */
async function nicIn(ns: Netns, name: string, mac: string, wire?: Netns): Promise<Netns> {
  const w = wire ?? (await Netns.create("nh5w"));
  try {
    await ns.veth(name, `${name}p`, { mac, peerNs: w });
    await waitFor(
      async () => {
        const [l] = await ns.json<{ operstate: string; addr_info?: { local: string }[] }[]>(
          "addr",
          "show",
          name,
        );
        return (
          l?.operstate === "UP" && (l.addr_info ?? []).some((a) => a.local.startsWith("fe80:"))
        );
      },
      { what: `${name} in ${ns.name} with carrier and a link-local address` },
    );
    return w;
  } catch (err) {
    if (!wire) await w.remove();
    throw err;
  }
}

/** A veth pair in `ns`: `name` with `mac`, its peer `name`p; both up. */
export async function addVeth(ns: Netns, name: string, mac: string): Promise<void> {
  await ns.ip("link", "add", name, "address", mac, "type", "veth", "peer", "name", `${name}p`);
  await ns.ip("link", "set", `${name}p`, "up");
  await ns.ip("link", "set", name, "up");
}

/** Everything sync or a bad call could change, as `ip -json` prints it. */
export async function snapshot(ns: Netns): Promise<string> {
  const parts = await Promise.all([
    ns.ip("-json", "link", "show"),
    ns.ip("-json", "addr", "show"),
    ns.ip("-json", "route", "show", "table", "main"),
    ns.ip("-json", "-6", "route", "show", "table", "main"),
    ns.ip("-json", "neigh", "show", "nud", "permanent"),
  ]);
  // Timers and DAD progress move by themselves; the configuration must not.
  const moving = new Set(["used", "valid_life_time", "preferred_life_time", "tentative"]);
  return parts
    .map((p) => JSON.stringify(JSON.parse(p || "[]"), (k, v) => (moving.has(k) ? undefined : v)))
    .join("\n");
}

export interface PlainRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  prefsrc?: string;
  scope?: string;
}

/** Non-kernel main-table routes of both families, via an independent `ip -json route`. */
export async function userRoutes(ns: Netns): Promise<PlainRoute[]> {
  const read = (...fam: string[]) =>
    ns.json<(PlainRoute & { protocol?: string })[]>(...fam, "route", "show", "table", "main");
  return plainRoutes([...(await read()), ...(await read("-6"))]);
}

/** `ip -json` routes (of the main table) as userRoutes gives them: not the kernel's, sorted. */
export function plainRoutes(all: readonly (PlainRoute & { protocol?: string })[]): PlainRoute[] {
  return all
    .filter((r) => r.protocol !== "kernel")
    .map(({ dst, gateway, dev, prefsrc, scope }) => ({
      dst,
      ...(gateway ? { gateway } : {}),
      ...(dev ? { dev } : {}),
      ...(prefsrc ? { prefsrc } : {}),
      ...(scope && scope !== "global" ? { scope } : {}),
    }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/** Writes `content` to a file in `dir` and returns its path. */
export function writeJson(dir: TempDir, name: string, content: unknown): string {
  const path = dir.join(name);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

export { Netns, randomMac, tempDir, waitFor };
