/**
 * netagentctl reaches netagent.v1 on the shim's own address in front mode:
 * dist/netagent --upstream (in a guest netns) in front of the Go stand-in
 * upstream, reached through a hybrid-vsock muxer as Firecracker and Cloud
 * Hypervisor run one (`CONNECT 1024\n`, `OK <port>\n`, then the bytes), while
 * a "shim" (containerd's Go client) keeps its own connection and long poll
 * open. sync (one Apply), diff (EQUAL by independent reads), check (the
 * upstream's answer), and sync --watch following routes, a policy rule with
 * its table and a sysctl changed in the running pod. The stand-in's record shows which calls went
 * through to it: Check and the shim's, never netagent.v1 or the network calls.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WatchEvent } from "../../src/host/watch/watch-output";
import { goClient, goPrograms } from "../helpers/go";
import { run } from "../helpers/process";
import {
  control,
  hex,
  type RunningUpstream,
  startUpstream,
  TEST_SERVICE,
} from "../helpers/upstream";
import { expectMirrorVerdict } from "./complete-helpers";
import { ctl, Guest, type Netns, PtpPod, tempDir, waitFor } from "./helpers";
import { rules, sysctl, tableText } from "./state-helpers";
import { guestEqualsPod, Watcher } from "./watch-helpers";

const dir = tempDir("netagent-front-ctl-");
let pod: PtpPod;
let guestNs: Netns;
let guest: Guest;
let upstream: RunningUpstream;
let muxer: Server;
const muxed: Socket[] = [];
let hvsock: string;
let mac: string;

/** A hybrid-vsock muxer on a unix socket: CONNECT 1024 reaches the front's socket. */
function startMuxer(path: string, front: string): Promise<Server> {
  const server = createServer((host) => {
    muxed.push(host);
    host.once("data", (first: Buffer) => {
      const line = first.toString("latin1");
      if (line !== "CONNECT 1024\n") return host.destroy();
      const guestSide = createConnection(front, () => {
        host.write("OK 1073741824\n");
        host.pipe(guestSide);
        guestSide.pipe(host);
      });
      muxed.push(guestSide);
      guestSide.on("error", () => host.destroy());
      host.on("error", () => guestSide.destroy());
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

beforeAll(async () => {
  goPrograms();
  pod = await PtpPod.create("10.248.249.0/28");
  mac = await pod.mac();
  upstream = await startUpstream(dir.join("upstream.sock"), dir.join("upstream.log"), "kata-agent");
  guest = await Guest.create(mac, "gst0", ["--upstream", `unix://${upstream.socket}`]);
  guestNs = guest.ns;
  muxer = await startMuxer(dir.join("vm.hvsock"), guest.agent.socket);
  hvsock = `hvsock://${dir.join("vm.hvsock")}:1024`;
}, 120_000);

afterAll(async () => {
  for (const s of muxed) s.destroy();
  if (muxer) await new Promise((r) => muxer.close(r));
  await guest?.remove();
  await upstream?.stop();
  await pod?.remove();
  dir.remove();
});

describe("netagentctl through a front over hybrid vsock", () => {
  it("check is the upstream's; sync is one Apply; diff says what an independent complete read says; beside a shim's own connection", async () => {
    // The shim: its own connection, a long poll open all along.
    const shim = goClient(guest.agent.socket, [
      { method: "Check" },
      {
        service: TEST_SERVICE,
        method: "Sleep",
        payload: hex(control({ 1: 4000, 2: "shim long poll" })),
      },
      { method: "Check" },
    ]);
    const check = await ctl(["--addr", hvsock, "check"]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/SERVING/);

    const s = await ctl(["--addr", hvsock, "sync", "--netns", pod.pod.name]);
    expect(s.code, s.stderr).toBe(0);
    expect(s.stdout).toContain("with one Apply (netagent.v1.Network)");
    const d = await ctl(["--addr", hvsock, "diff", "--netns", pod.pod.name]);
    await expectMirrorVerdict(d, pod.pod.name, guestNs.name);
    expect(await tableText(guestNs, "main")).toEqual(await tableText(pod.pod, "main"));

    const steps = await shim;
    expect(steps.map((x) => x.results?.[0]?.code)).toEqual([0, 0, 0]);
    const seen = upstream.requests().map((r) => `${r.service}/${r.method}`);
    expect(seen.filter((m) => m === "grpc.Health/Check").length).toBeGreaterThanOrEqual(3);
    expect(seen).toContain(`${TEST_SERVICE}/Sleep`);
    expect(
      seen.filter((m) => m.startsWith("netagent.v1.") || m.startsWith("grpc.AgentService/")),
    ).toEqual([]);
  });

  it("sync --watch mirrors routes, a rule with its table and a sysctl changed in the running pod", async () => {
    const watch = await Watcher.start(hvsock, pod.pod.name);
    try {
      expect(watch.events.some((e) => e.event === "resync")).toBe(true);
      // A sysctl has no event of its own: it goes with the next sync, which the routes trigger.
      await run("ip", [
        "netns",
        "exec",
        pod.pod.name,
        "sysctl",
        "-qw",
        "net.ipv4.conf.eth0.rp_filter=2",
      ]);
      await pod.pod.ip("route", "add", "192.0.2.0/24", "via", "10.248.249.1", "dev", "eth0");
      await pod.pod.ip("rule", "add", "from", "10.248.249.0/28", "table", "100", "priority", "300");
      await pod.pod.ip(
        "route",
        "add",
        "default",
        "via",
        "10.248.249.1",
        "dev",
        "eth0",
        "table",
        "100",
      );
      await waitFor(() => guestEqualsPod(pod.pod, guestNs, [mac]), {
        what: "guest equal to pod",
        timeoutMs: 20_000,
      });
      await waitFor(
        async () => {
          const [g, p] = [await rules(guestNs), await rules(pod.pod)];
          return (
            JSON.stringify(g) === JSON.stringify(p) && g.some((r) => r.includes('"table":"100"'))
          );
        },
        { what: "the rule mirrored", timeoutMs: 20_000 },
      );
      // The rule comes before the table's route: a resync between the two satisfies the
      // waits above while the guest's table 100 is still empty. Wait for the table itself.
      await waitFor(
        async () =>
          JSON.stringify(await tableText(guestNs, "100")) ===
          JSON.stringify(["default via 10.248.249.1 dev eth0"]),
        { what: "the guest's table 100 mirrored", timeoutMs: 20_000 },
      );
      expect(await tableText(guestNs, "100")).toEqual(["default via 10.248.249.1 dev eth0"]);
      const resynced = watch.events.filter(
        (e): e is Extract<WatchEvent, { event: "resync" }> => e.event === "resync",
      );
      expect(resynced.length).toBeGreaterThanOrEqual(2);
      await waitFor(async () => (await sysctl(guestNs, "net.ipv4.conf.eth0.rp_filter")) === "2", {
        what: "rp_filter mirrored",
        timeoutMs: 20_000,
      });
    } finally {
      await watch.child.stop("SIGTERM");
    }
  });
});
