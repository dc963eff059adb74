/**
 * `netagentctl follow` with the QEMU guest as one sandbox: a CNI ptp pod,
 * the VM booted with the pod NIC's MAC, and a sandbox directory laid out as
 * Kata's Go shim lays it out whose `shim-monitor.sock` answers the
 * `unix://` address the VM runner gives (the host end of its virtio-serial
 * agent channel). The follower finds it, syncs it and says `equal` by its
 * complete comparison; a route added in the pod follows. Checked
 * independently through the guest's debug shell (`ip` run by the guest,
 * not the agent). The channel takes one host connection at a time and the
 * follower holds it, so no other netagentctl runs meanwhile.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBootSpec } from "../../src/host/vm/boot-spec";
import { Vm } from "../../src/host/vm/vm";
import { FollowerProc } from "../host/follow-helpers";
import { Netns, PtpPod, tempDir, waitFor } from "../host/helpers";
import { goPersist, sandboxDir, shimMonitor } from "../host/kata-standins";
import { ensureGuestImage } from "./image";

const BOOT_TIMEOUT_MS = 300_000;
const STEP_MS = 240_000;

describe("follow keeps the QEMU guest, one sandbox, equal to its pod", () => {
  let vm: Vm | undefined;
  let pod: PtpPod;
  let followNs: Netns;
  let f: FollowerProc | undefined;
  let shim: { stop(): void } | undefined;
  const dir = tempDir("netagent-follow-vm-");
  const root = dir.join("sbs");

  beforeAll(async () => {
    ensureGuestImage();
    pod = await PtpPod.create("10.248.252.0/28");
    followNs = await Netns.create("nh5f");
    const spec = loadBootSpec("dist/guest/boot-initramfs.json");
    vm = await Vm.start({
      boot: spec,
      mac: await pod.mac(),
      debugConsole: true,
      onNote: (line) => console.log(`vm: ${line}`),
    });
    await vm.waitForAgent(BOOT_TIMEOUT_MS);
  }, BOOT_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    await f?.child.kill();
    shim?.stop();
    if (vm) await vm.stop();
    await pod?.remove();
    await followNs?.remove();
    dir.remove();
  }, 60_000);

  /** The guest's addresses and routes, read by its own shell. */
  const guestIp = async () =>
    (await (vm as Vm).console.run("/sbin/ip -o addr show; /sbin/ip route", 60_000)).lines.join(
      "\n",
    );

  it(
    "found through shim-monitor.sock, synced, equal; a change in the pod follows",
    async () => {
      const sbx = sandboxDir(root, "vm-1");
      writeFileSync(
        join(sbx, "persist.json"),
        JSON.stringify(goPersist({ netns: `/var/run/netns/${pod.pod.name}` })),
        { mode: 0o600 },
      );
      const addr = (vm as Vm).agentAddress;
      shim = shimMonitor(sbx, () => addr);
      f = await FollowerProc.start(followNs, [root], dir.join("status.sock"), [], 60);
      const s = await f.until("vm-1", (x) => x.state === "equal", "equal", STEP_MS);
      console.log(`/sandboxes: ${JSON.stringify(await f.sandboxes())}`);
      expect(s.addr).toBe(addr);
      const podAddr = (await pod.addresses()).find((a) => a.startsWith("10.248.252."));
      let text = await guestIp();
      expect(text).toMatch(new RegExp(`eth0\\s+inet ${podAddr}`));
      await pod.pod.ip("route", "add", "192.0.2.0/24", "via", "10.248.252.1", "dev", "eth0");
      await f.until(
        "vm-1",
        (x) => x.state === "equal" && x.syncs === s.syncs + 1,
        "resynced",
        STEP_MS,
      );
      text = await waitFor(
        async () => {
          const t = await guestIp();
          return t.includes("192.0.2.0/24 via 10.248.252.1 dev eth0") ? t : undefined;
        },
        { what: "the route in the guest, by its own ip", timeoutMs: STEP_MS },
      );
      console.log(`guest# ip -o addr show; ip route\n${text}`);
      // The follower's own lines (--json), for the transcript.
      console.log(`follower:\n${f.events.map((e) => JSON.stringify(e)).join("\n")}`);
    },
    STEP_MS * 3,
  );
});
