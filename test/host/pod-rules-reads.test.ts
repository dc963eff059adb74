/**
 * A followed pod's packet filter is read again only when its
 * xtables-monitor reported a change (src/host/watch/pod-rules-reads.ts):
 * in a real netns with a real xtables-monitor, a second read with no
 * change starts no iptables-save; a rule added with iptables-nft is read
 * (checked against iptables-nft-save run separately); legacy tables, whose
 * changes no monitor reports, and a stopped monitor, make every read read.
 * And the legacy save is left out only where /proc says it has no table:
 * the rules read so equal those of a read that runs every save.
 */
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { legacyTablesInside, type Rules, readPodRules } from "../../src/host/pod/iptables-pod";
import { PodMonitor } from "../../src/host/watch/pod-monitor";
import { PodRulesReads } from "../../src/host/watch/pod-rules-reads";
import { xtablesMonitorTool } from "../../src/host/watch/rules-monitor";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";

let ns: Netns | undefined;
let monitor: PodMonitor | undefined;
afterEach(async () => {
  monitor?.stop();
  monitor = undefined;
  await ns?.remove();
  ns = undefined;
});

const inNs = (name: string, args: string[]): string => {
  const r = spawnSync("ip", ["netns", "exec", name, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};

/** A pod netns, its monitor feeding `reads`, and a count of the reads that ran. */
async function followed(): Promise<{
  name: string;
  reads: PodRulesReads;
  ran: () => number;
  reported: () => number;
}> {
  ns = await Netns.create("nrr");
  const name = ns.name;
  let ran = 0;
  let reported = 0;
  const read = (netns: string, opts: { legacyTables?: ReadonlySet<4 | 6> }): Promise<Rules> => {
    ran++;
    return readPodRules(netns, opts);
  };
  const reads = new PodRulesReads(name, () => monitor?.pid, read);
  monitor = new PodMonitor(xtablesMonitorTool(name), {
    onEvent: () => {
      reported++;
      reads.changed();
    },
    onExit: () => {},
  });
  await monitor.start();
  return { name, reads, ran: () => ran, reported: () => reported };
}

describe("a followed pod's packet filter", () => {
  it("is read once until the monitor reports a change, then read again", async () => {
    const { name, reads, ran, reported } = await followed();
    inNs(name, ["iptables-nft", "-A", "INPUT", "-p", "tcp", "--dport", "4001", "-j", "DROP"]);
    await waitFor(() => reported() > 0, { what: "the monitor's report" });
    const first = await reads.read();
    expect(ran()).toBe(1);
    expect(first[4]).toContain("--dport 4001");
    expect(await reads.read()).toBe(first);
    expect(ran()).toBe(1);

    inNs(name, ["iptables-nft", "-A", "INPUT", "-p", "tcp", "--dport", "4002", "-j", "DROP"]);
    await waitFor(() => reported() > 1, { what: "the monitor's report" });
    const now = await reads.read();
    expect(ran()).toBe(2);
    expect(now[4]).toContain("--dport 4002");
    expect(now[4]).toBe(inNs(name, ["iptables-nft-save"]));
  });

  it("with legacy tables in the pod every read reads, and sees them", async () => {
    const { name, reads, ran } = await followed();
    await reads.read();
    const count = ran();
    await reads.read();
    expect(ran()).toBe(count);
    inNs(name, ["ip6tables-legacy", "-A", "INPUT", "-p", "tcp", "--dport", "4003", "-j", "DROP"]);
    const read = await reads.read();
    expect(read[6]).toContain("--dport 4003");
    await reads.read();
    expect(ran()).toBe(count + 2);
  });

  it("with its monitor stopped every read reads", async () => {
    const { reads, ran } = await followed();
    await reads.read();
    const count = ran();
    monitor?.stop();
    await waitFor(() => legacyTablesInside(ns?.name ?? "", monitor?.pid ?? 0) === undefined);
    await reads.read();
    await reads.read();
    expect(ran()).toBe(count + 2);
  });

  it("a legacy save is left out only where the pod has no legacy table", async () => {
    const { name } = await followed();
    const pid = monitor?.pid ?? 0;
    expect(legacyTablesInside(name, pid)).toEqual(new Set());
    // A process outside the pod's namespace (this one) says nothing of it.
    expect(legacyTablesInside(name, process.pid)).toBeUndefined();
    inNs(name, ["iptables-nft", "-A", "INPUT", "-p", "tcp", "--dport", "4004", "-j", "DROP"]);
    const none = legacyTablesInside(name, pid);
    expect(await readPodRules(name, { legacyTables: none })).toEqual(await readPodRules(name));
    inNs(name, ["ip6tables-legacy", "-A", "OUTPUT", "-p", "udp", "--dport", "4005", "-j", "DROP"]);
    expect(legacyTablesInside(name, pid)).toEqual(new Set([6]));
    const hinted = await readPodRules(name, { legacyTables: legacyTablesInside(name, pid) });
    expect(hinted[6]).toContain("--dport 4005");
    expect(hinted).toEqual(await readPodRules(name));
  });
});
