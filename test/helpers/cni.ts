/**
 * Runs Debian's real CNI plugins (/usr/lib/cni) the way a container runtime
 * does: the plugin runs inside a private "host" namespace (never the
 * machine's own), attaches a "pod" namespace, and gets DEL on cleanup.
 */
import { spawn } from "node:child_process";
import type { Netns } from "./netns";
import { type TempDir, tempDir } from "./tmp";

export const CNI_PATH = "/usr/lib/cni";

export interface CniAttachment {
  result: Record<string, unknown>;
  /** CNI DEL, then the IPAM data directory is removed. */
  detach(): Promise<void>;
}

/** Runs one plugin inside `host` with `config` on stdin; resolves with its stdout. */
export function runPlugin(
  host: Netns,
  plugin: string,
  env: Record<string, string>,
  config: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("ip", ["netns", "exec", host.name, `${CNI_PATH}/${plugin}`], {
      env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", CNI_PATH, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${plugin} ${env.CNI_COMMAND}: exit ${code}: ${out}${err}`)),
    );
    child.stdin.end(config);
  });
}

/**
 * `ptp` with `host-local` IPAM: `ranges` are subnets, one range set per
 * family; routes default to the default route of each family.
 */
export async function attachPtp(
  host: Netns,
  pod: Netns,
  opts: { subnets: string[]; routes?: string[]; ifname?: string; mtu?: number },
): Promise<CniAttachment> {
  const data: TempDir = tempDir("netagent-cni-");
  const routes = opts.routes ?? opts.subnets.map((s) => (s.includes(":") ? "::/0" : "0.0.0.0/0"));
  const config = JSON.stringify({
    cniVersion: "1.0.0",
    name: "netagent-test",
    type: "ptp",
    ipMasq: false,
    ...(opts.mtu ? { mtu: opts.mtu } : {}),
    ipam: {
      type: "host-local",
      ranges: opts.subnets.map((subnet) => [{ subnet }]),
      routes: routes.map((dst) => ({ dst })),
      dataDir: data.path,
    },
  });
  const env = {
    CNI_CONTAINERID: pod.name,
    CNI_NETNS: `/run/netns/${pod.name}`,
    CNI_IFNAME: opts.ifname ?? "eth0",
  };
  const out = await runPlugin(host, "ptp", { ...env, CNI_COMMAND: "ADD" }, config);
  return {
    result: JSON.parse(out),
    async detach() {
      try {
        await runPlugin(host, "ptp", { ...env, CNI_COMMAND: "DEL" }, config);
      } finally {
        data.remove();
      }
    },
  };
}
