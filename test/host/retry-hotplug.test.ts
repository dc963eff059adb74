/**
 * Hot-plug simulated: the guest's link does not exist when sync starts. The
 * agent answers UpdateInterface with "Link not found" (its own wait ends
 * just before the 3 s deadline), sync backs off and retries; once the veth
 * with the MAC is moved into the guest netns from a side netns, the next
 * attempt finds it and the sync completes.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Child } from "../helpers/process";
import {
  addVeth,
  ctl,
  Guest,
  Netns,
  randomMac,
  startCtl,
  tempDir,
  waitFor,
  writeJson,
} from "./helpers";

describe("sync retries UpdateInterface while the link is not found", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("the link appears in the guest after the sync began: sync succeeds after several attempts", async () => {
    const mac = randomMac();
    const guest = await Guest.create();
    cleanups.push(() => guest.remove());
    const side = await Netns.create("nh5s");
    cleanups.push(() => side.remove());
    await addVeth(side, "late0", mac);
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    const file = writeJson(dir, "result.json", {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", mac, sandbox: "/run/netns/pod" }],
      ips: [{ interface: 0, address: "10.77.0.2/24", gateway: "10.77.0.1" }],
      routes: [{ dst: "0.0.0.0/0" }],
    });

    const sync: Child = startCtl([
      "--addr",
      guest.addr,
      "--timeout",
      "3",
      "--json",
      "sync",
      "--cni-result",
      file,
    ]);
    cleanups.push(() => sync.kill());

    // The sync has begun and been told at least once that the link is missing.
    await waitFor(() => guest.agent.child.stderr.includes("Link not found"), {
      timeoutMs: 20_000,
      what: "the agent to answer Link not found",
    });
    expect(sync.running).toBe(true);
    await side.ip("link", "set", "late0", "netns", guest.ns.name);

    const exit = await sync.exited;

    await sync.drained();
    expect(exit.code, sync.stderr).toBe(0);
    const report = JSON.parse(sync.stdout) as {
      interfaces: { hwAddr: string; name: string; attempts: number }[];
    };
    expect(report.interfaces).toHaveLength(1);
    expect(report.interfaces[0]?.name).toBe("eth0");
    expect(report.interfaces[0]?.attempts).toBeGreaterThanOrEqual(2);

    const diff = await ctl(["--addr", guest.addr, "diff", "--cni-result", file]);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
  });

  it("gives up after the bounded attempts when the link never comes: NOT_FOUND, exit 1", async () => {
    const guest = await Guest.create();
    cleanups.push(() => guest.remove());
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    const file = writeJson(dir, "result.json", {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", mac: randomMac(), sandbox: "/x" }],
      ips: [{ interface: 0, address: "10.77.0.2/24" }],
    });
    // Each attempt ends with the agent's "Link not found" shortly before the 3 s deadline (250 ms early).
    const started = performance.now();
    const r = await ctl(
      ["--addr", guest.addr, "--timeout", "3", "sync", "--attempts", "3", "--cni-result", file],
      undefined,
      40_000,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^netagentctl sync: NOT_FOUND: Link not found \(hwAddr /);
    const updates = guest.agent.child.stderr.match(/"method":"UpdateInterface"/g) ?? [];
    expect(updates).toHaveLength(3);
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});

describe("sync through Apply retries while the pod's NIC is not in the guest yet", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("Apply answers Link not found until the link appears; sync then succeeds and diff is EQUAL", async () => {
    const mac = randomMac();
    const pod = await Netns.create("nh5q");
    cleanups.push(() => pod.remove());
    const host = await Netns.create("nh5h");
    cleanups.push(() => host.remove());
    await pod.veth("eth0", "veth0", { mac, peerNs: host });
    await pod.ip("addr", "add", "10.78.0.2/24", "dev", "eth0");
    await pod.ip("route", "add", "default", "via", "10.78.0.1", "dev", "eth0");
    const guest = await Guest.create();
    cleanups.push(() => guest.remove());
    const side = await Netns.create("nh5s");
    cleanups.push(() => side.remove());
    await addVeth(side, "late0", mac);

    const sync: Child = startCtl(["--addr", guest.addr, "--json", "sync", "--netns", pod.name]);
    cleanups.push(() => sync.kill());
    await waitFor(() => guest.agent.child.stderr.includes("Link not found"), {
      timeoutMs: 20_000,
      what: "the agent to answer Link not found",
    });
    expect(sync.running).toBe(true);
    await side.ip("link", "set", "late0", "netns", guest.ns.name);

    const exit = await sync.exited;

    await sync.drained();
    expect(exit.code, sync.stderr).toBe(0);
    const report = JSON.parse(sync.stdout) as { api: string; attempts: number };
    expect(report.api).toBe("netagent.v1.Network/Apply");
    expect(report.attempts).toBeGreaterThanOrEqual(2);
    const routes = await guest.ns.json<{ dst: string; gateway?: string }[]>("route", "show");
    expect(routes).toContainEqual(
      expect.objectContaining({ dst: "default", gateway: "10.78.0.1" }),
    );
    const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
  });
});
