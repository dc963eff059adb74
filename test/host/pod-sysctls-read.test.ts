/**
 * The pod's sysctls as sync reads them (one `grep` over the namespace's
 * /proc/sys/net, keyed as sysctl(8) names them) are exactly what procps
 * `sysctl -a` prints inside the namespace, read here separately: a link
 * whose name has a dot, a changed value and a changed neighbour timer
 * (whose deprecated seconds twin sysctl(8) leaves out) included.
 */
import { describe, expect, test } from "vitest";
import { sysctlKeys } from "../../src/host/pod/pod-state";
import { readNetnsSysctlTree } from "../../src/net/sysctl/sysctl-grep";
import type { Netns } from "../helpers/netns";
import { run } from "../helpers/process";
import { linkedPerTest } from "../helpers/veth-per-test";

const linked = linkedPerTest();

async function inside(ns: Netns, ...argv: string[]) {
  const r = await run("ip", ["netns", "exec", ns.name, ...argv]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe("the pod's sysctls", () => {
  test("are sysctl -a's net.* keys and values, deprecated twins left out as it leaves them", async () => {
    const pod = await linked("nsk", "eth0.7");
    await inside(pod, "sysctl", "-qw", "net.ipv4.conf.eth0/7.rp_filter=2");
    await inside(pod, "sysctl", "-qw", "net.ipv4.neigh.eth0/7.base_reachable_time_ms=15500");

    const procps = new Map<string, string>();
    for (const line of (await inside(pod, "sysctl", "-a", "-r", "^net\\.")).split("\n")) {
      const at = line.indexOf(" = ");
      if (at > 0) procps.set(line.slice(0, at), line.slice(at + 3));
    }
    const read = sysctlKeys(await readNetnsSysctlTree(pod.name));

    expect(read.get("net.ipv4.conf.eth0/7.rp_filter")).toBe("2");
    expect(read.get("net.ipv4.neigh.eth0/7.base_reachable_time_ms")).toBe("15500");
    expect(read.has("net.ipv4.neigh.eth0/7.base_reachable_time")).toBe(false);
    expect([...read].sort()).toEqual([...procps].sort());
  });
});
