/**
 * `netagentctl sync --watch` following a CNI ptp pod into an agent in a
 * guest netns (whose veths carry the pod NICs' MACs). Every step waits for
 * the guest to equal the pod by independent `ip -json` reads of both, then
 * checks what the watcher said. Steps: first sync; routes added and
 * removed; an address changed; a packet filter rule; a burst of 200 routes (debounced into a few
 * resyncs); a NIC added to the pod (its guest twin hot-plugged later); the
 * NIC removed (guest twin stripped); the agent restarted (reconnect and
 * resend); a quiet spell (no CPU, no sync); SIGTERM during a sync (it
 * finishes first, exit 0); the pod namespace deleted (exit 0). A
 * namespace by /proc path, and the usage it refuses:
 * sync-watch-usage.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WatchEvent } from "../../src/host/watch/watch-output";
import { agentAt } from "../helpers/agent";
import { rulesIn } from "../helpers/iptables";
import { type Child, run } from "../helpers/process";
import { Guest, type Netns, PtpPod, randomMac, tempDir, waitFor } from "./helpers";
import { addPodNic, addressesOf, cpuTicks, guestEqualsPod, Watcher } from "./watch-helpers";

type Resync = Extract<WatchEvent, { event: "resync" }>;
const isResync = (e: WatchEvent): e is Resync => e.event === "resync";

/**
 * A guest NIC with `mac` appearing, as a hot-plug would. The agent renames
 * and raises it as soon as it exists, so nothing here touches it by name
 * after creation; its peer is brought up for carrier.
 */
async function guestTwin(ns: Netns, name: string, mac: string): Promise<void> {
  await ns.ip("link", "add", `${name}p`, "type", "veth", "peer", "name", name, "address", mac);
  await ns.ip("link", "set", `${name}p`, "up");
}

let pod: PtpPod;
let guest: Guest;
let agent: Child;
let watch: Watcher;
const dir = tempDir("netagent-watch-");
const socket = dir.join("agent.sock");
const addr = `unix://${socket}`;
let mac0: string;
let podRemoved = false;
const mac1 = randomMac();

const equal = (what: string, macs = [mac0]) =>
  waitFor(() => guestEqualsPod(pod.pod, guest.ns, macs), {
    what: `guest equal to pod: ${what}`,
    timeoutMs: 20_000,
  });

beforeAll(async () => {
  pod = await PtpPod.create("10.248.247.0/28");
  mac0 = await pod.mac();
  guest = await Guest.create(mac0);
  // The shared guest's own agent is not the one driven here: stop it and
  // run one on a fixed path that can be restarted.
  await guest.agent.stop();
  agent = await agentAt(guest.ns, socket);
  watch = await Watcher.start(addr, pod.pod.name);
});
afterAll(async () => {
  await watch?.child.kill();
  await agent?.kill();
  // The whole guest: its netns and its NIC's wire netns (its agent is stopped already).
  await guest?.remove();
  if (!podRemoved) await pod?.remove();
  dir.remove();
});

describe("sync --watch follows a pod", () => {
  it("the first sync makes the guest equal to the pod", async () => {
    const first = watch.resyncs()[0];
    expect(first?.initial).toBe(true);
    expect(first?.routes).toBe(3);
    await equal("first sync");
  });

  it("routes added and removed, an address changed: one resync each burst, guest equal", async () => {
    const before = watch.resyncs().length;
    await pod.pod.ip("route", "add", "192.0.2.0/24", "via", "10.248.247.1", "dev", "eth0");
    await pod.pod.ip("-6", "addr", "add", "2001:db8:14::2/64", "dev", "eth0", "nodad");
    await pod.pod.ip(
      "-6",
      "route",
      "add",
      "2001:db8:15::/64",
      "via",
      "2001:db8:14::1",
      "dev",
      "eth0",
    );
    await equal("routes added");
    const added = await watch.next(
      (e) => isResync(e) && e.changes.routesAdded.some((r) => r.startsWith("2001:db8:15::/64")),
    );
    expect(added.event).toBe("resync");

    const mark = watch.events.length;
    await pod.pod.ip("route", "del", "192.0.2.0/24");
    await pod.pod.ip("-6", "addr", "del", "2001:db8:14::2/64", "dev", "eth0");
    await pod.pod.ip("-6", "addr", "add", "2001:db8:14::3/64", "dev", "eth0", "nodad");
    await pod.pod.ip(
      "-6",
      "route",
      "replace",
      "2001:db8:15::/64",
      "via",
      "2001:db8:14::1",
      "dev",
      "eth0",
    );
    await equal("route removed, address changed");
    const changed = await watch.next(
      (e) =>
        isResync(e) && e.changes.interfacesChanged.some((c) => c.includes("+2001:db8:14::3/64")),
    );
    expect(changed.event).toBe("resync");
    // The four ip commands may fall into one burst or several (a slow machine).
    const said = watch.events.slice(mark).filter(isResync);
    expect(said.flatMap((e) => e.changes.interfacesChanged).join(" ")).toContain(
      "-2001:db8:14::2/64",
    );
    expect(said.flatMap((e) => e.changes.routesRemoved)).toContain(
      "192.0.2.0/24 via 10.248.247.1 dev eth0",
    );
    expect(watch.resyncs().length - before).toBeLessThanOrEqual(8);
  });

  it("a packet filter rule added in the pod (iptables-nft): followed by xtables-monitor, copied", async () => {
    const rule = "-A INPUT -s 192.0.2.7/32 -j DROP";
    expect(rulesIn(guest.ns.name)).not.toContain(rule);
    await run("ip", ["netns", "exec", pod.pod.name, "iptables", ...rule.split(" ")]);
    const e = (await watch.next((x) => isResync(x) && x.changes.rules)) as Resync;
    expect(e.packetFilter).toContain("iptables 1 rule(s) sent");
    // Independently: the guest netns's own iptables-save.
    expect(rulesIn(guest.ns.name)).toContain(rule);
  });

  it("a burst of 200 route changes in one ip -batch gives a few resyncs, not 200", async () => {
    const before = watch.resyncs().length;
    const lines = Array.from(
      { length: 200 },
      (_, i) => `route add 198.18.${i}.0/24 via 10.248.247.1 dev eth0`,
    );
    const batch = tempDir("netagent-batch-");
    try {
      const file = batch.join("b");
      await Bun.write(file, `${lines.join("\n")}\n`);
      await pod.pod.ip("-batch", file);
    } finally {
      batch.remove();
    }
    await watch.next((e) => isResync(e) && e.routes >= 200);
    await equal("200 routes");
    const n = watch.resyncs().length - before;
    expect(n).toBeGreaterThanOrEqual(1);
    expect(n).toBeLessThanOrEqual(5);
    expect(watch.resyncs().at(-1)?.guestRoutes).toBeGreaterThan(200);
  });
});

describe("sync --watch follows a pod: a NIC added and removed, the agent restarted", () => {
  it("a NIC added to the pod: the sync waits for the guest's hot-plugged twin", async () => {
    await addPodNic(pod.pod, pod.host, "eth1", `h1${pod.pod.name.slice(-6)}`, mac1);
    await pod.pod.ip("addr", "add", "10.14.1.2/24", "dev", "eth1");
    await pod.pod.ip("route", "add", "10.14.64.0/18", "via", "10.14.1.1", "dev", "eth1");
    // The guest's NIC comes once a sync is held up for want of it, as a hot-plug would:
    // the agent answers Apply "Link not found" (the sync retries), or its Kata call waits.
    await waitFor(
      () =>
        agent.stderr
          .split("\n")
          .some(
            (l) =>
              l.includes(mac1) &&
              (l.includes("Link not found") || l.includes("waiting for a hot-plugged link")),
          ),
      { timeoutMs: 20_000, what: `a sync held up for want of ${mac1}` },
    );
    await guestTwin(guest.ns, "gst1", mac1);
    await equal("NIC added", [mac0, mac1]);
    expect(await addressesOf(guest.ns, mac1)).toEqual(["10.14.1.2/24"]);
    const e = await watch.next(
      (x) => isResync(x) && x.changes.interfacesAdded.some((i) => i.includes(mac1)),
    );
    expect((e as Resync).interfaces).toBe(2);
  });

  it("the NIC removed from the pod: its guest twin stays but loses its addresses and routes", async () => {
    await pod.pod.ip("link", "del", "eth1");
    const e = (await watch.next((x) => isResync(x) && x.retired.length > 0)) as Resync;
    // The agent offers Apply, so the NIC is also set down (the Kata calls cannot).
    expect(e.via).toBe("apply");
    expect(e.retired).toEqual([
      { hwAddr: mac1, name: "eth1", found: true, flushed: ["10.14.1.2/24"], down: true },
    ]);
    expect(await addressesOf(guest.ns, mac1)).toEqual([]);
    const routes = await guest.ns.json<{ dst: string; dev: string }[]>(
      "route",
      "show",
      "table",
      "main",
    );
    expect(routes.filter((r) => r.dev === "eth1")).toEqual([]);
    const [link] = await guest.ns.json<{ address: string; flags: string[] }[]>(
      "link",
      "show",
      "eth1",
    );
    expect(link?.address).toBe(mac1);
    expect(link?.flags).not.toContain("UP");
    await equal("NIC removed");
  });

  it("the agent restarted: the watch reconnects with backoff and resends everything", async () => {
    await agent.stop("SIGTERM");
    // While it is down the guest drifts (as a rebooted guest would) and the pod changes.
    await guest.ns.ip("route", "flush", "table", "main", "proto", "boot");
    await pod.pod.ip("route", "add", "203.0.113.0/24", "via", "10.248.247.1", "dev", "eth0");
    await watch.next((e) => e.event === "error" && e.retry);
    agent = await agentAt(guest.ns, socket);
    const e = await watch.next((x) => isResync(x) && x.reconnected, 30_000);
    expect(e.event).toBe("resync");
    await equal("after the agent's restart");
  });
});

describe("sync --watch follows a pod: a quiet pod, SIGTERM, the pod deleted", () => {
  it("a quiet pod costs no CPU and no sync", async () => {
    // What one resync costs here and now (a pod change read, diffed and
    // applied): the yardstick, measured under the same load as the window.
    const start = cpuTicks(watch.child.pid);
    await pod.pod.ip("route", "add", "100.64.77.0/24", "via", "10.248.247.1", "dev", "eth0");
    await watch.next((x) => isResync(x));
    const oneSync = cpuTicks(watch.child.pid) - start;
    // Let the last events (DAD, neighbour probes) and the runtime's garbage
    // collection after the busy steps settle, then measure.
    // not a wait: a quiet window before the measured one, for the runtime's collection after the busy steps; its length is part of the measurement
    await new Promise((r) => setTimeout(r, 5000));
    const before = watch.events.length;
    const t0 = cpuTicks(watch.child.pid);
    // not a wait: the measured quiet window: CPU and syncs over 10 s of a pod that does not change
    await new Promise((r) => setTimeout(r, 10_000));
    const used = cpuTicks(watch.child.pid) - t0;
    expect(watch.events.slice(before).filter(isResync)).toEqual([]);
    // Ticks are 10 ms; ended children count (cutime). A bare idle Bun
    // process uses 0-1 per 15 s and the runtime's housekeeping a few more
    // after busy steps (8 quiet, 11 at load 4 in a CI run); one full read
    // of the pod (ip, iptables-save twice, sysctls) about 8 quiet, so a
    // poll once a second costs about 80 and more under load. The bound:
    // under two resyncs' worth in 10 s (one measured 18 quiet: 36, against
    // ~80 for a 1 s poll), and never under the quiet 8. (The quiet-minute
    // figure is in the bench.)
    expect(used, `one resync: ${oneSync} ticks`).toBeLessThanOrEqual(Math.max(8, 2 * oneSync));
  });

  it("SIGTERM while a sync (Kata calls) waits for a hot-plug: the sync finishes, then exit 0", async () => {
    // Through Apply a missing NIC is NOT_FOUND at once and the watch retries
    // with backoff; the Kata path waits inside the sync, which is what this
    // step needs: a watcher with --kata takes over.
    await watch.child.stop("SIGINT");
    expect(watch.events.at(-1)).toMatchObject({ event: "end", reason: "signal", signal: "SIGINT" });
    watch = await Watcher.start(addr, pod.pod.name, ["--kata"]);
    expect(watch.resyncs()[0]?.via).toBe("kata");
    const mac2 = randomMac();
    await addPodNic(pod.pod, pod.host, "eth2", `h2${pod.pod.name.slice(-6)}`, mac2);
    await pod.pod.ip("addr", "add", "10.14.2.2/24", "dev", "eth2");
    // The sync is waiting for a guest NIC with mac2 once the agent says so
    // (a fixed second was not always enough under load).
    await waitFor(
      () =>
        agent.stderr
          .split("\n")
          .some((l) => l.includes("waiting for a hot-plugged link") && l.includes(mac2)),
      { what: `the agent waiting for ${mac2}` },
    );
    process.kill(watch.child.pid, "SIGTERM");
    // not a wait: a stretch in which the watch must not exit (SIGTERM waits for the sync in flight); load only shortens it in effect
    await new Promise((r) => setTimeout(r, 1000));
    expect(watch.child.running).toBe(true);
    await guestTwin(guest.ns, "gst2", mac2);
    const exit = await watch.child.exited;
    await watch.child.drained();
    expect(exit.code, watch.child.stderr).toBe(0);
    const last = watch.events.at(-1);
    expect(last).toMatchObject({ event: "end", reason: "signal", signal: "SIGTERM" });
    const final = watch.events.at(-2) as Resync;
    expect(final.event).toBe("resync");
    expect(final.changes.interfacesAdded.some((i) => i.includes(mac2))).toBe(true);
    expect(await addressesOf(guest.ns, mac2)).toEqual(["10.14.2.2/24"]);
  });

  it("the pod namespace deleted: a final line, exit 0", async () => {
    const w = await Watcher.start(addr, pod.pod.name);
    podRemoved = true;
    await pod.remove();
    const exit = await w.child.exited;
    await w.child.drained();
    expect(exit.code, w.child.stderr).toBe(0);
    expect(w.events.at(-1)).toMatchObject({ event: "end", reason: "netns-deleted" });
  });
});
