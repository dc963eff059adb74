/**
 * Reads a pod's packet filter on the host, whichever backend wrote it. A
 * pod's init (istio-init, linkerd's proxy-init, CNI plugins) uses the
 * host's flavour of iptables, so a pod may hold nftables-backed rules
 * (Debian 12's default) or legacy x_tables rules, which `iptables-nft-save`
 * does not show (it only warns on stderr). Both are read; the text is the
 * same dialect, so either can be restored into the guest's iptables-nft.
 */
import { readFileSync, statSync } from "node:fs";
import { type IpFamily, IptablesRunner } from "../../net/iptables/iptables-runner";
import { hasRules } from "../../net/iptables/iptables-text";
import { NetError } from "../../net/model/net-error";
import { netnsFile } from "../../process/command";

export type Rules = Record<IpFamily, string>;

const latin1 = (data: Uint8Array) => Buffer.from(data).toString("latin1");
const FAMILIES: readonly IpFamily[] = [4, 6];

/** Runners for one backend: iptables-nft-save or iptables-legacy-save in `netns`. */
function backendRunner(netns: string, backend: "nft" | "legacy"): IptablesRunner {
  return new IptablesRunner({
    netns,
    binaries: {
      "iptables-save": `iptables-${backend}-save`,
      "ip6tables-save": `ip6tables-${backend}-save`,
    },
  });
}

/** A backend's save, or "" when its tool is not installed on the host. */
async function saveOrNothing(r: IptablesRunner, family: IpFamily): Promise<string> {
  try {
    return latin1(await r.save(family));
  } catch (err) {
    // Spawned directly: "cannot run"; through nsenter: "failed to execute".
    if (err instanceof NetError && /^cannot run |failed to execute/.test(err.message)) return "";
    throw err;
  }
}

/** The file naming a family's legacy tables, in /proc/PID/net of a process. */
const TABLES_NAMES: Record<IpFamily, string> = { 4: "ip_tables_names", 6: "ip6_tables_names" };

/**
 * Which families have legacy (x_tables) tables in `netns`, seen through
 * `pid`, a process inside it (a monitor of the pod): its
 * /proc/PID/net/ip_tables_names and ip6_tables_names, the very files
 * iptables-legacy-save lists the tables from; empty or absent (a kernel
 * without x_tables), no table, and the save would print nothing.
 * Undefined when `pid` is not (or no longer) inside `netns`, or a file
 * cannot be read: then the save runs.
 */
export function legacyTablesInside(netns: string, pid: number): Set<IpFamily> | undefined {
  try {
    const ns = statSync(netnsFile(netns));
    const its = statSync(`/proc/${pid}/ns/net`);
    if (ns.dev !== its.dev || ns.ino !== its.ino) return undefined;
    const out = new Set<IpFamily>();
    for (const family of FAMILIES) {
      let names = "";
      try {
        names = readFileSync(`/proc/${pid}/net/${TABLES_NAMES[family]}`, "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") return undefined;
      }
      if (names.trim() !== "") out.add(family);
    }
    // Read after the files: the process was still inside when they were read.
    return statSync(`/proc/${pid}/ns/net`).ino === ns.ino ? out : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pod's rules of both families, as iptables-save prints them, read
 * inside `netns`: the nftables backend's, or the legacy backend's when only
 * it has rules. Throws when both hold rules for one family (which one the
 * pod's traffic meets depends on hook order; mirroring one would mislead).
 * `legacyTables`: the families with legacy tables, when known without a
 * process (legacyTablesInside): the legacy save runs only for those.
 */
export async function readPodRules(
  netns: string,
  opts: { legacyTables?: ReadonlySet<IpFamily> } = {},
): Promise<Rules> {
  const nft = backendRunner(netns, "nft");
  const legacy = backendRunner(netns, "legacy");
  const tables = opts.legacyTables;
  const legacySave = (f: IpFamily) =>
    tables === undefined || tables.has(f) ? saveOrNothing(legacy, f) : Promise.resolve("");
  const out = {} as Rules;
  // The processes only read: at once, a sync waits for the slowest instead of all of them.
  const saves = await Promise.all(
    FAMILIES.map((f) => Promise.all([saveOrNothing(nft, f), legacySave(f)])),
  );
  for (const [i, family] of FAMILIES.entries()) {
    const [a, b] = saves[i] as [string, string];
    if (hasRules(a) && hasRules(b)) {
      const tool = family === 6 ? "ip6tables" : "iptables";
      throw new Error(
        `the pod has ${tool} rules in both the nftables and the legacy backend: not mirrored (see ${tool}-nft-save and ${tool}-legacy-save in its netns)`,
      );
    }
    out[family] = hasRules(b) ? b : a;
  }
  return out;
}
