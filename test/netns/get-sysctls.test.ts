/**
 * Get's sysctls are what procps `sysctl -a` prints inside the guest's
 * namespace, read separately: every namespaced key the agent manages and
 * every key of conf/ and neigh/ for all, default and each link Get lists
 * (a link whose name has a dot included, spelled "/" as sysctl(8) spells
 * it), with its value; besides them only the deprecated seconds twins of
 * the neighbour timers, which sysctl(8) leaves out.
 */
import { afterEach, expect, test } from "vitest";
import { AgentClient } from "../../src/client/client";
import { Network } from "../../src/gen/network_pb";
import { NAMESPACED_KEYS, PER_INTERFACE } from "../../src/net/sysctl/sysctl-keys";
import type { RunningAgent } from "../helpers/agent";
import { run } from "../helpers/process";
import { linkedPerTest } from "../helpers/veth-per-test";

const linked = linkedPerTest();
let agent: RunningAgent | undefined;
let client: AgentClient | undefined;
afterEach(async () => {
  client?.close();
  await agent?.stop();
  agent = client = undefined;
});

test("Get's sysctls are sysctl -a's, for the links Get lists", async () => {
  const ns = await linked("ngs", "eth0.7");
  const inside = async (...argv: string[]) => {
    const r = await run("ip", ["netns", "exec", ns.name, ...argv]);
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  };
  await inside("sysctl", "-qw", "net.ipv4.conf.eth0/7.rp_filter=2");
  await inside("sysctl", "-qw", "net.ipv6.neigh.eth0/7.base_reachable_time_ms=15500");
  agent = await ns.startAgent();
  client = await AgentClient.connect(`unix://${agent.socket}`);
  const state = await client.unary(Network.method.get, {}, { timeoutMs: 10_000 });
  const got = new Map(state.sysctls.map((s) => [s.key, s.value]));

  const names = state.interfaces.map((i) => i.name);
  expect(names).toContain("eth0.7");
  const parts = ["all", "default", ...names].map((n) => n.replaceAll(".", "/"));
  const wanted = (key: string) =>
    NAMESPACED_KEYS.includes(key) ||
    PER_INTERFACE.some(({ prefix }) =>
      parts.some(
        (p) =>
          key.startsWith(`${prefix}${p}.`) &&
          !key.slice(prefix.length + p.length + 1).includes("."),
      ),
    );
  const procps = new Map<string, string>();
  for (const line of (await inside("sysctl", "-a", "-r", "^net\\.")).split("\n")) {
    const at = line.indexOf(" = ");
    if (at > 0 && wanted(line.slice(0, at))) procps.set(line.slice(0, at), line.slice(at + 3));
  }

  expect(got.get("net.ipv4.conf.eth0/7.rp_filter")).toBe("2");
  expect(got.get("net.ipv6.neigh.eth0/7.base_reachable_time_ms")).toBe("15500");
  expect(procps.size).toBeGreaterThan(100);
  const extra = [...got.keys()].filter((k) => !procps.has(k));
  expect(
    extra.filter((k) => !/\.neigh\.[^.]+\.(base_reachable_time|retrans_time)$/.test(k)),
  ).toEqual([]);
  expect([...got].filter(([k]) => procps.has(k)).sort()).toEqual([...procps].sort());
});
