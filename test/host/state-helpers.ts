/**
 * What the whole-state (netagent.v1) tests share: a pod wired by a real CNI
 * chain (ptp + tuning + sbr from /usr/lib/cni), and independent reads of a
 * namespace (`ip -n NS -json rule`, `route show table all`, sysctl files read
 * by a process inside the namespace) to check results without the agent.
 */
import { attachChain, type Chain, ptpPlugin } from "../helpers/cni-chain";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";

export const TUNING = {
  type: "tuning",
  mtu: 1400,
  sysctl: { "net.ipv4.conf.eth0.rp_filter": "2", "net.ipv4.conf.eth0.arp_ignore": "1" },
};

/** A CNI pod with a rule and a table of its own: ptp (10.248.246.144/28) + tuning + sbr on eth0. */
export function ptpTuningSbr(subnet = "10.248.246.144/28") {
  return (dir: string) => [ptpPlugin(subnet, dir), TUNING, { type: "sbr" }];
}

export class ChainPod {
  readonly chains: Chain[] = [];

  private constructor(
    readonly host: Netns,
    readonly pod: Netns,
  ) {}

  static async create(): Promise<ChainPod> {
    return new ChainPod(await Netns.create("n11h"), await Netns.create("n11p"));
  }

  async attach(
    plugins: (dir: string) => Record<string, unknown>[],
    opts: { ifname?: string; name?: string; prevResult?: Record<string, unknown> } = {},
  ): Promise<Chain> {
    const c = await attachChain(this.host, this.pod, plugins, opts);
    this.chains.push(c);
    return c;
  }

  async mac(ifname = "eth0"): Promise<string> {
    const [link] = await this.pod.json<{ address: string }[]>("link", "show", ifname);
    return link?.address as string;
  }

  async remove(): Promise<void> {
    try {
      for (const c of this.chains.reverse()) await c.detach().catch(() => {});
    } finally {
      await this.pod.remove();
      await this.host.remove();
    }
  }
}

/** `ip rule` of both families as text lines (priority: selectors action), sorted. */
export async function rules(ns: Netns): Promise<string[]> {
  const read = async (fam: string[]) =>
    (await ns.json<Record<string, unknown>[]>(...fam, "rule", "show")).map(
      (r) => `${fam.length ? "v6" : "v4"} ${JSON.stringify({ ...r, protocol: undefined })}`,
    );
  return [...(await read([])), ...(await read(["-6"]))].sort();
}

/** Every route of every table but the kernel's own in table local, one JSON line each, sorted. */
export async function allRoutes(ns: Netns): Promise<string[]> {
  const rows = await ns.json<Record<string, unknown>[]>("route", "show", "table", "all");
  return rows
    .filter((r) => !(r.table === "local" && r.protocol === "kernel"))
    .map((r) => JSON.stringify(r, (k, v) => (k === "expires" ? undefined : v)))
    .sort();
}

/** Routes of one table as `ip route` prints them (text, one line each). */
export async function tableText(
  ns: Netns,
  table: string,
  family: "-4" | "-6" = "-4",
): Promise<string[]> {
  const r = await run("ip", ["-n", ns.name, family, "route", "show", "table", table]);
  if (r.code !== 0) {
    if (/table does not exist/.test(r.stderr)) return [];
    throw new Error(`ip route show table ${table} in ${ns.name}: ${r.stderr}`);
  }
  return r.stdout
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

/** A sysctl read by a process inside the namespace (cat), not by the agent. */
export async function sysctl(ns: Netns, key: string): Promise<string> {
  const path = `/proc/sys/${key.replaceAll(".", "/")}`;
  const r = await run("ip", ["netns", "exec", ns.name, "cat", path]);
  if (r.code !== 0) throw new Error(`cat ${path} in ${ns.name}: ${r.stderr}`);
  return r.stdout.trim();
}
