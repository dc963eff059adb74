/**
 * The guest's network policy against a hostile host, with the real CNI ptp
 * pod: `netagentctl policy --netns` writes the pod's policy, the agent in a
 * guest netns runs under it (--policy), sync (Apply, then the Kata
 * sequence) mirrors the pod and diff says EQUAL. Then every request of the
 * hostile corpus (policy-corpus.ts: the pod's own set-up with one malicious
 * change) goes through containerd's Go ttrpc client: each is refused
 * (PERMISSION_DENIED naming the rule; INVALID_ARGUMENT where validation
 * refuses it first) and an independent `ip -json` read (and sysctl,
 * iptables-save) of the guest is as before. Last, the running phase: the
 * same policy starting in it admits a sync that changes nothing and
 * refuses one that removes a route.
 */

import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApplyRequestSchema, StateSchema, SysctlSchema } from "../../src/gen/network_pb";
import { readPodRequests } from "../../src/host/pod/pod-requests";
import { readFreshDefaults, readPodFullState } from "../../src/host/pod/pod-state";
import { applyRequestFor } from "../../src/host/sync/drive-state";
import { Code } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";
import { saveIn } from "../helpers/iptables";
import { ctl, Guest, type Netns, PtpPod, tempDir } from "./helpers";
import { hostileCorpus } from "./policy-corpus";

const REFUSAL = /^policy rule ([A-Za-z0-9.]+) refuses /;

/** The guest as independent tools read it: links, addresses, every table, rules, neighbours, sysctls, packet filter. */
async function guestSnapshot(ns: Netns): Promise<string> {
  const parts = await Promise.all([
    ns.ip("-json", "-d", "link", "show"),
    ns.ip("-json", "addr", "show"),
    ns.ip("-json", "route", "show", "table", "all"),
    ns.ip("-json", "-6", "route", "show", "table", "all"),
    ns.ip("-json", "rule", "show"),
    ns.ip("-json", "-6", "rule", "show"),
    ns.ip("-json", "neigh", "show", "nud", "permanent"),
  ]);
  const moving = new Set(["used", "valid_life_time", "preferred_life_time", "tentative"]);
  const json = parts.map((p) =>
    JSON.stringify(JSON.parse(p || "[]"), (k, v) => (moving.has(k) ? undefined : v)),
  );
  const sysctl = spawnSync(
    "ip",
    [
      "netns",
      "exec",
      ns.name,
      "sysctl",
      "-a",
      "-r",
      "^net\\.(ipv4\\.(ip_forward|conf)|ipv6\\.conf)",
    ],
    { encoding: "utf8" },
  ).stdout;
  const filter = [4, 6].map((f) => saveIn(ns.name, f as 4 | 6).replace(/^#.*\n/gm, "")).join("");
  return [...json, sysctl, filter].join("\n");
}

/** Where two snapshots part, with some context. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `${JSON.stringify(a.slice(Math.max(0, i - 120), i + 80))} became ${JSON.stringify(b.slice(Math.max(0, i - 120), i + 80))}`;
}

let pod: PtpPod;
let guest: Guest;
const dir = tempDir("netagent-policy-");
let policyFile: string;
let policy: Record<string, unknown>;
const podName = () => pod.pod.name;

beforeAll(async () => {
  goPrograms();
  pod = await PtpPod.create();
  const out = await ctl(["policy", "--netns", podName()]);
  expect(out.code, out.stderr).toBe(0);
  policy = JSON.parse(out.stdout);
  policyFile = dir.join("policy.json");
  writeFileSync(policyFile, out.stdout);
  guest = await Guest.create(await pod.mac(), "gst0", ["--policy", policyFile]);
});
afterAll(async () => {
  await guest?.remove();
  await pod?.remove();
  dir.remove();
});

describe("a hostile host against a guest under its pod's generated policy", () => {
  it("the pod's own network syncs under it (Apply and the Kata sequence), diff EQUAL", async () => {
    console.log(`generated policy of the ptp pod:\n${JSON.stringify(policy, null, 2)}`);
    for (const kata of [[], ["--kata"]]) {
      const sync = await ctl(["--addr", guest.addr, "sync", ...kata, "--netns", podName()]);
      expect(sync.code, sync.stdout + sync.stderr).toBe(0);
      const diff = await ctl(["--addr", guest.addr, "diff", ...kata, "--netns", podName()]);
      expect(diff.code, diff.stdout + diff.stderr).toBe(0);
      expect(diff.stdout).toContain("verdict: EQUAL");
    }
  });

  // 45 requests, each followed by a complete independent read of the guest (nine processes):
  // about 20 s alone, several times that beside other tests on two shared cores.
  it("every request of the corpus is refused with its rule and leaves the guest as it was", async () => {
    const path = `/run/netns/${podName()}`;
    const kata = await readPodRequests(path);
    const { request } = applyRequestFor(
      await readPodFullState(path),
      create(StateSchema),
      await readFreshDefaults(),
    );
    const gw = kata.routes.find((r) => r.gateway !== "")?.gateway as string;
    const corpus = hostileCorpus(kata, request, gw);
    expect(corpus.length).toBeGreaterThanOrEqual(40);
    const before = await guestSnapshot(guest.ns);
    const rows: string[] = [];
    const wrong: string[] = [];
    for (const h of corpus) {
      const [step] = await goClient(guest.agent.socket, [
        {
          service: h.service,
          method: h.method,
          payload: Buffer.from(h.payload).toString("hex"),
          timeoutMs: 20_000,
        },
      ]);
      const result = step?.results?.[0];
      const after = await guestSnapshot(guest.ns);
      const rule =
        REFUSAL.exec(result?.message ?? "")?.[1] ??
        (result?.code === Code.INVALID_ARGUMENT ? "validation" : `code ${result?.code}`);
      const unchanged = after === before;
      rows.push(`| ${h.name} | ${rule} | ${unchanged ? "yes" : "NO"} |`);
      const code = h.rule === "validation" ? Code.INVALID_ARGUMENT : Code.PERMISSION_DENIED;
      if (rule !== h.rule || result?.code !== code || !unchanged) {
        const where = unchanged ? "" : `: ${firstDifference(before, after)}`;
        wrong.push(
          `${h.name}: ${rule} (${result?.code} ${result?.message}), unchanged ${unchanged}${where}`,
        );
      }
    }
    console.log(`| request | refused by | guest unchanged |\n|---|---|---|\n${rows.join("\n")}`);
    expect(wrong).toEqual([]);
    const [metrics] = await goClient(guest.agent.socket, [
      { service: "grpc.AgentService", method: "GetMetrics" },
    ]);
    const text = Buffer.from(metrics?.results?.[0]?.payload ?? "", "hex").toString("latin1");
    expect(text).toMatch(/netagent_policy_refusals_total\{rule="routes\.gateways"\} [1-9]/);
  }, 300_000);
});

describe("a hostile host against a guest under its pod's generated policy: the CNI network's policies, the running phase", () => {
  it("the policy of every pod of its CNI network (--cni-config) admits the pod's sync too", async () => {
    const conf = dir.join("ptp.conflist");
    writeFileSync(
      conf,
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "t",
        plugins: [
          {
            type: "ptp",
            ipMasq: false,
            ipam: {
              type: "host-local",
              subnet: "10.248.246.144/28",
              routes: [{ dst: "0.0.0.0/0" }],
            },
          },
        ],
      }),
    );
    const out = await ctl(["policy", "--cni-config", conf]);
    expect(out.code, out.stderr).toBe(0);
    const network = dir.join("network.json");
    writeFileSync(network, out.stdout);
    await guest.agent.stop();
    (guest as unknown as { agent: RunningAgent }).agent = await guest.ns.startAgent([
      "--policy",
      network,
    ]);
    for (const kata of [[], ["--kata"]]) {
      const sync = await ctl(["--addr", guest.addr, "sync", ...kata, "--netns", podName()]);
      expect(sync.code, sync.stdout + sync.stderr).toBe(0);
      const diff = await ctl(["--addr", guest.addr, "diff", ...kata, "--netns", podName()]);
      expect(diff.stdout).toContain("verdict: EQUAL");
    }
  });

  it("the running phase: a sync that changes nothing goes, one that removes a route is refused", async () => {
    const running = dir.join("running.json");
    writeFileSync(
      running,
      JSON.stringify({
        ...policy,
        // A key the guest's kernel lacks: a best-effort Apply leaves it out before planning.
        sysctls: { "net.ipv4.conf.eth0.no_such_key": "any" },
        phases: { initial: "running", settleMs: 0, running: [] },
      }),
    );
    await guest.agent.stop();
    const agent: RunningAgent = await guest.ns.startAgent(["--policy", running]);
    (guest as unknown as { agent: RunningAgent }).agent = agent;
    const same = await ctl(["--addr", guest.addr, "sync", "--netns", podName()]);
    expect(same.code, same.stdout + same.stderr).toBe(0);
    const before = await guestSnapshot(guest.ns);
    // A change the policy admits in set-up: the pod's subnet route goes.
    await pod.pod.ip("route", "del", "10.248.246.144/28");
    const changed = await ctl(["--addr", guest.addr, "sync", "--netns", podName()]);
    expect(changed.code).not.toBe(0);
    expect(changed.stdout + changed.stderr).toMatch(/policy rule phases\.running refuses/);
    expect(await guestSnapshot(guest.ns)).toBe(before);
    // The same change with an element best_effort leaves out before the first plan.
    const path = `/run/netns/${podName()}`;
    const { request } = applyRequestFor(
      await readPodFullState(path),
      create(StateSchema),
      await readFreshDefaults(),
    );
    request.desired?.sysctls.push(
      create(SysctlSchema, { key: "net.ipv4.conf.eth0.no_such_key", value: "1" }),
    );
    const [step] = await goClient(guest.agent.socket, [
      {
        service: "netagent.v1.Network",
        method: "Apply",
        payload: Buffer.from(toBinary(ApplyRequestSchema, request)).toString("hex"),
      },
    ]);
    expect(step?.results?.[0]?.message).toMatch(/^policy rule phases\.running refuses/);
    expect(await guestSnapshot(guest.ns)).toBe(before);
  });
});
