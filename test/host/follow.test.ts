/**
 * `netagentctl follow` on a node laid out as Kata lays it out
 * (kata-standins.ts): CNI ptp pods in real namespaces, each guest a netns
 * with dist/netagent, reached through a hybrid-vsock stand-in whose address
 * a real HTTP shim-monitor.sock answers (Go layout), or a unix address with
 * runtime-rs's state.json. Every "equal" the follower reports is checked by
 * an independent read of both namespaces; Apply calls are counted from the
 * agents' own logs. Steps: first sync; a root missing at start and a
 * sandbox appearing in it; a change in a pod; a refusal by a guest's
 * network policy; a half-written persist.json;
 * hostile sandboxes (each failed with its reason while the others go on);
 * the follower restarted (compares, sends nothing); an agent restarted
 * with an empty guest (re-synced); a pod netns deleted and a sandbox
 * directory removed (dropped, its processes gone); SIGTERM.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentAt } from "../helpers/agent";
import { type Child, pidAlive, processName, processTree, run } from "../helpers/process";
import { callsLogged, FollowerProc } from "./follow-helpers";
import { Guest, NETAGENTCTL, Netns, PtpPod, tempDir, waitFor } from "./helpers";
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

/** A pod and its guest; `policy`: the guest's agent runs the tightest policy admitting the pod as it is now. */
async function side(subnet: string, dir: string, name: string, policy = false): Promise<Side> {
  const pod = await PtpPod.create(subnet);
  const mac = await pod.mac();
  const guest = await Guest.create(mac);
  await guest.agent.stop(); // replaced by one on a fixed path that logs its calls
  const socket = join(dir, `${name}.sock`);
  const extra: string[] = [];
  if (policy) {
    const r = await run(NETAGENTCTL, ["policy", "--netns", pod.pod.name]);
    if (r.code !== 0) throw new Error(`netagentctl policy: ${r.stderr}`);
    writeFileSync(join(dir, `${name}-policy.json`), r.stdout);
    extra.push("--policy", join(dir, `${name}-policy.json`));
  }
  const agent = await agentAt(guest.ns, socket, { logLevel: "debug", args: extra });
  return { pod, guest, agent, socket, mac };
}

const equalNow = (s: Side) => guestEqualsPod(s.pod.pod, s.guest.ns, [s.mac]);

const tmp = tempDir("netagent-follow-");
const goRoot = tmp.join("run/vc/sbs");
const rsRoot = tmp.join("run/kata");
const status = tmp.join("status.sock");
let followNs: Netns;
let f: FollowerProc;
let a: Side;
let b: Side;
let c: Side;
const servers: { close(): void }[] = [];
const shims: { stop(): void }[] = [];

beforeAll(async () => {
  mkdirSync(goRoot, { recursive: true });
  followNs = await Netns.create("nh5f");
  a = await side("10.248.250.0/28", tmp.path, "a");
  b = await side("10.248.250.16/28", tmp.path, "b");
  c = await side("10.248.250.32/28", tmp.path, "c", true);
  // Sandbox c, Go layout without a shim socket: the address from persist.json.
  const dirC = sandboxDir(goRoot, "sbx-c");
  writeFileSync(
    join(dirC, "persist.json"),
    JSON.stringify(
      goPersist({
        netns: `/var/run/netns/${c.pod.pod.name}`,
        agentUrl: `unix://${c.socket}`,
        mac: c.mac,
      }),
    ),
    { mode: 0o600 },
  );
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
  for (const s of [a, b, c]) {
    await s?.agent.kill();
    await s?.guest.remove();
    await s?.pod.remove().catch(() => {});
  }
  await followNs?.remove();
  tmp.remove();
});

describe("follow keeps every Kata sandbox's guest equal to its pod", () => {
  it("syncs a sandbox found at start: equal by an independent read", async () => {
    const s = await f.until("sbx-a", (x) => x.state === "equal", "equal");
    expect(s.addr).toBe(`hvsock://${join(goRoot, "sbx-a", "kata.hvsock")}:1024`);
    expect(s.netns).toBe(`/var/run/netns/${a.pod.pod.name}`);
    expect(s.syncs).toBe(1);
    expect(new Date(s.lastSync as string).toISOString()).toBe(s.lastSync);
    expect(await equalNow(a)).toBe(true);
    expect(callsLogged(a.agent, "Apply")).toBe(1);
    await f.until("sbx-c", (x) => x.state === "equal", "equal");
    expect(await equalNow(c)).toBe(true);
    // A later pod event (its own link-local leaving detection) may bring
    // another sync between the reads: the counter is held between what
    // /sandboxes says just before and just after it.
    const syncs = async () => {
      const all = await f.sandboxes();
      return ["sbx-a", "sbx-c"].map((id) => all.find((x) => x.id === id)?.syncs ?? 0);
    };
    const [low, lowC] = await syncs();
    const metrics = await (await f.get("/metrics")).text();
    const [high, highC] = await syncs();
    expect(metrics).toMatch(/^netagent_follow_sandboxes\{state="equal"\} 2$/m);
    const ofA = /^netagent_follow_syncs_total\{sandbox="sbx-a"\} (\d+)$/m.exec(metrics);
    expect(Number(ofA?.[1])).toBeGreaterThanOrEqual(low ?? 1);
    expect(Number(ofA?.[1])).toBeLessThanOrEqual(high ?? 1);
    const equalCount = /^netagent_follow_change_to_equal_seconds_count (\d+)$/m.exec(metrics);
    expect(Number(equalCount?.[1])).toBeGreaterThanOrEqual(2);
    expect(Number(equalCount?.[1])).toBeLessThanOrEqual((high ?? 1) + (highC ?? 1));
    expect(lowC).toBeGreaterThanOrEqual(1);
    expect(metrics).toMatch(/^netagent_follow_resident_memory_bytes [1-9]\d+$/m);
    expect(metrics).toMatch(/^netagent_follow_children 3$/m); // ip monitor all-nsid, 2 xtables-monitors
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

  it("a refusal by the guest's policy fails the sandbox naming the rule; retried only when the pod changes again", async () => {
    const gw = "10.248.250.33";
    await c.pod.pod.ip("route", "add", "203.0.113.0/24", "via", gw, "dev", "eth0");
    const s = await f.until("sbx-c", (x) => x.state === "failed", "failed");
    expect(s.lastError).toMatch(
      /^refused by policy: routes\.destinations \(PERMISSION_DENIED: policy rule routes\.destinations refuses /,
    );
    const refused = callsLogged(c.agent, "Apply", true);
    expect(refused).toBe(1);
    // Not retried: a window past the first two backoff steps (100, 200 ms) sees no further Apply.
    // not a wait: a window in which nothing may happen; load only shortens it in effect
    await Bun.sleep(1500);
    expect(callsLogged(c.agent, "Apply", true)).toBe(refused);
    expect((await f.sandboxes()).find((x) => x.id === "sbx-c")?.state).toBe("failed");
    await c.pod.pod.ip("route", "del", "203.0.113.0/24");
    await f.until("sbx-c", (x) => x.state === "equal", "equal again after the pod changed");
    expect(await equalNow(c)).toBe(true);
  });
});

describe("follow keeps every Kata sandbox's guest equal to its pod: hostile sandboxes", () => {
  it("hostile sandboxes each fail with their reason; the others go on; the follower lives", async () => {
    const outside = tmp.join("outside");
    mkdirSync(outside, { recursive: true });
    const valid = JSON.stringify(
      goPersist({ netns: `/run/netns/${b.pod.pod.name}`, agentUrl: `unix://${b.socket}` }),
    );
    writeFileSync(join(outside, "persist.json"), valid);
    const persist = (id: string, text: string) =>
      writeFileSync(join(sandboxDir(goRoot, id), "persist.json"), text);
    persist("h-trunc", valid.slice(0, 40));
    persist("h-huge", `${" ".repeat(2 << 20)}${valid}`);
    persist("h-notjson", "hello, not JSON");
    const notNetns = tmp.join("not-a-netns");
    writeFileSync(notNetns, "");
    persist(
      "h-notnetns",
      JSON.stringify(goPersist({ netns: notNetns, agentUrl: `unix://${b.socket}` })),
    );
    persist(
      "h-scheme",
      JSON.stringify(
        goPersist({ netns: `/run/netns/${b.pod.pod.name}`, agentUrl: "remote://192.0.2.1:1024" }),
      ),
    );
    symlinkSync(outside, join(goRoot, "h-symlink"));
    symlinkSync(
      join(outside, "persist.json"),
      join(sandboxDir(goRoot, "h-link-file"), "persist.json"),
    );
    const shimCase = async (id: string, behave: (s: import("node:net").Socket) => void) => {
      const dir = sandboxDir(goRoot, id);
      servers.push(await hostileShim(dir, behave));
      persist(id, valid);
    };
    await shimCase("h-hang", () => {});
    await shimCase("h-garbage", (s) => s.end("\u0000\u0001garbage\r\n\r\n"));
    await shimCase("h-mega", (s) => {
      s.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5242880\r\n\r\n");
      s.end(Buffer.alloc(5 << 20, 0x41));
    });
    const expected: Record<string, RegExp> = {
      "h-trunc": /persist\.json does not parse: .* \(for 3 s\)/,
      "h-huge": /over the 1048576-byte cap/,
      "h-notjson": /persist\.json does not parse: .* \(for 3 s\)/,
      "h-notnetns": /is not a network namespace/,
      "h-scheme": /unknown scheme "remote"/,
      "h-symlink": /is a symlink out of/,
      "h-link-file": /leads out of/,
      "h-hang": /no answer within 2000 ms/,
      "h-garbage": /GET \/agent-url/,
      "h-mega": /longer than 4096 bytes/,
    };
    for (const [id, why] of Object.entries(expected)) {
      const s = await f.until(id, (x) => x.state === "failed", "failed");
      expect(s.lastError, id).toMatch(why);
      // Said for an operator: no advice meant for the code that made the request.
      expect(s.lastError, id).not.toMatch(/verbose|fetch\(\)/);
      // The log says it too, once, prefixed with the sandbox.
      expect(
        f.about(id).some((e) => e.state === "failed" && why.test(String(e.detail))),
        id,
      ).toBe(true);
    }
    if (process.env.FOLLOW_DUMP_HOSTILE) {
      writeFileSync(process.env.FOLLOW_DUMP_HOSTILE, JSON.stringify(await f.sandboxes(), null, 1));
    }
    // The others went on: b still follows its pod.
    const syncs = (await f.sandboxes()).find((x) => x.id === "sbx-b")?.syncs ?? 0;
    await b.pod.pod.ip("route", "add", "198.51.100.0/24", "via", "10.248.250.17", "dev", "eth0");
    await f.until("sbx-b", (x) => x.state === "equal" && x.syncs === syncs + 1, "resynced");
    expect(await equalNow(b)).toBe(true);
    expect((await f.get("/healthz")).status).toBe(200);
    for (const id of Object.keys(expected))
      rmSync(join(goRoot, id), { recursive: true, force: true });
    await waitFor(async () => (await f.sandboxes()).every((x) => !x.id.startsWith("h-")), {
      what: "hostile sandboxes dropped with their directories",
    });
  });
});

describe("follow keeps every Kata sandbox's guest equal to its pod: half-written files, restarts, removals", () => {
  it("a persist.json met half written is read again at its next write, not failed", async () => {
    const dir = sandboxDir(goRoot, "h-half");
    const text = JSON.stringify(
      goPersist({ netns: tmp.join("netns-later"), agentUrl: `unix://${b.socket}` }),
    );
    rewriteInPlace(join(dir, "persist.json"), text, 25);
    await f.until("h-half", (x) => x.state === "waiting", "waiting");
    rewriteInPlace(join(dir, "persist.json"), text);
    await f.until(
      "h-half",
      (x) => /netns-later is not there/.test(x.lastError ?? ""),
      "read again",
    );
    // not a wait: past the 3 s a parse failure may last; the good write counted, it stays waiting
    await Bun.sleep(3500);
    const s = (await f.sandboxes()).find((x) => x.id === "h-half");
    expect(s?.state).toBe("waiting");
    rmSync(dir, { recursive: true });
  });

  it("pod namespaces got nsids in the follower's namespace only", async () => {
    const ids = JSON.parse(await followNs.ip("-j", "netns", "list-id")) as { name?: string }[];
    const names = ids.map((x) => x.name);
    expect(names).toContain(a.pod.pod.name);
    expect(names).toContain(b.pod.pod.name);
  });

  it("restarted (SIGTERM: exit 0 within 5 s), it compares and sends nothing to guests already equal", async () => {
    const applies = [a, b, c].map((s) => callsLogged(s.agent, "Apply"));
    const t0 = performance.now();
    const exit = await f.child.stop("SIGTERM");
    expect(exit.code).toBe(0);
    expect(performance.now() - t0).toBeLessThan(5000);
    f = await FollowerProc.start(followNs, [goRoot, rsRoot], status);
    for (const id of ["sbx-a", "sbx-b", "sbx-c"]) {
      const s = await f.until(id, (x) => x.state === "equal", "equal");
      expect(s.syncs).toBe(0);
      expect(f.about(id).some((e) => e.event === "checked" && e.equal === true)).toBe(true);
    }
    expect([a, b, c].map((s) => callsLogged(s.agent, "Apply"))).toEqual(applies);
  });

  it("an agent restarted with an empty guest is re-synced within 3 s of its first answer", async () => {
    await a.agent.stop("SIGTERM");
    // The VM rebooted: its NIC has no address and no route any more.
    const links = await a.guest.ns.json<{ ifname: string; address: string }[]>("link", "show");
    const name = links.find((l) => l.address === a.mac)?.ifname;
    expect(name).toBeDefined();
    await a.guest.ns.ip("addr", "flush", "dev", name as string, "scope", "global");
    expect(await equalNow(a)).toBe(false);
    a.agent = await agentAt(a.guest.ns, a.socket, { logLevel: "debug" });
    const answered = performance.now();
    await waitFor(() => equalNow(a), { what: "guest a equal again", timeoutMs: 20_000 });
    expect(performance.now() - answered).toBeLessThan(3000);
    await f.until("sbx-a", (x) => x.state === "equal", "equal");
  });

  it("a pod netns deleted drops its sandbox and what was started for it; a removed directory drops it from /sandboxes", async () => {
    const monitors = () =>
      processTree(f.child.pid).filter((p) => processName(p) === "xtables-monitor").length;
    expect(monitors()).toBe(3);
    await b.pod.remove();
    await f.until(
      "sbx-b",
      (x) => x.state === "waiting" && /deleted/.test(x.lastError ?? ""),
      "dropped",
    );
    await waitFor(() => monitors() === 2, { what: "b's xtables-monitor gone" });
    expect(f.about("sbx-b").some((e) => e.state === "dropped")).toBe(true);
    rmSync(join(rsRoot, "sbx-b"), { recursive: true });
    await waitFor(async () => !(await f.sandboxes()).some((x) => x.id === "sbx-b"), {
      what: "sbx-b gone from /sandboxes",
    });
    expect(pidAlive(f.child.pid)).toBe(true);
  });

  it("killed (SIGKILL, no time to clean up), it leaves nothing running: its monitors end with it", async () => {
    const started = processTree(f.child.pid).filter((p) => p !== f.child.pid);
    const names = started.map(processName);
    expect(names).toContain("xtables-monitor");
    expect(names).toContain("ip");
    await f.child.kill();
    await waitFor(() => started.every((p) => !pidAlive(p)), {
      what: `the follower's children (${names.join(", ")}) gone after its death`,
      timeoutMs: 5000,
    });
  });
});
