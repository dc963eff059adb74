/**
 * A CNI plugin chain (a conflist) run the way libcni runs one: ADD through
 * each plugin in order, each getting the previous result as `prevResult`;
 * DEL in reverse order. Plugins are Debian's real ones in /usr/lib/cni, run
 * inside a private "host" namespace, never the machine's own.
 */
import { CNI_PATH, runPlugin } from "./cni";
import type { Netns } from "./netns";
import { type TempDir, tempDir } from "./tmp";

export { CNI_PATH };

export interface Chain {
  result: Record<string, unknown>;
  /** DEL through the chain in reverse, then the IPAM directory goes. */
  detach(): Promise<void>;
}

/** The usual test plugins: ptp with host-local IPAM on `subnet`, default route. */
export function ptpPlugin(subnet: string, dataDir: string): Record<string, unknown> {
  return {
    type: "ptp",
    ipMasq: false,
    ipam: { type: "host-local", subnet, routes: [{ dst: "0.0.0.0/0" }], dataDir },
  };
}

/**
 * Runs `plugins` (each with its `type`) as one network `name` for the pod's
 * `ifname`. `plugins` may be a function of the IPAM data directory.
 */
export async function attachChain(
  host: Netns,
  pod: Netns,
  plugins: (dataDir: string) => Record<string, unknown>[],
  opts: { ifname?: string; name?: string; prevResult?: Record<string, unknown> } = {},
): Promise<Chain> {
  const data: TempDir = tempDir("netagent-chain-");
  const list = plugins(data.path);
  const name = opts.name ?? "chain";
  const env = {
    CNI_CONTAINERID: `${pod.name}-${name}`,
    CNI_NETNS: `/run/netns/${pod.name}`,
    CNI_IFNAME: opts.ifname ?? "eth0",
  };
  const conf = (p: Record<string, unknown>, prev?: unknown) =>
    JSON.stringify({ cniVersion: "1.0.0", name, ...p, ...(prev ? { prevResult: prev } : {}) });
  // A chain continued after an earlier ADD of the same network starts from its result.
  let prev: Record<string, unknown> | undefined = opts.prevResult;
  try {
    for (const p of list) {
      prev = JSON.parse(
        await runPlugin(host, p.type as string, { ...env, CNI_COMMAND: "ADD" }, conf(p, prev)),
      );
    }
  } catch (err) {
    data.remove();
    throw err;
  }
  const result = prev as Record<string, unknown>;
  return {
    result,
    async detach() {
      try {
        for (const p of [...list].reverse()) {
          await runPlugin(host, p.type as string, { ...env, CNI_COMMAND: "DEL" }, conf(p, result));
        }
      } finally {
        data.remove();
      }
    },
  };
}
