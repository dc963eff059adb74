/**
 * `sync --watch` with a real QEMU guest: a CNI ptp pod followed into the
 * VM; then a second NIC appears in the pod and its twin is hot-plugged into
 * the running VM through QEMU's monitor (QMP netdev_add + device_add of a
 * virtio-net-pci on a PCIe root port); the watch follows. Checked
 * independently through the guest's debug shell (`ip` run by the guest, not
 * the agent). The virtio-serial agent channel takes one host connection at
 * a time, and the watcher holds it, so no other netagentctl runs meanwhile.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBootSpec } from "../../src/host/vm/boot-spec";
import { Vm } from "../../src/host/vm/vm";
import { PtpPod, randomMac, tempDir } from "../host/helpers";
import { addPodNic, Watcher } from "../host/watch-helpers";
import { ensureGuestImage } from "./image";

const BOOT_TIMEOUT_MS = 300_000;
const STEP_MS = 240_000;

/** Runs QMP commands on a fresh connection, one after the other; rejects on an error answer. */
function qmp(path: string, commands: { execute: string; arguments?: unknown }[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    const queue = [{ execute: "qmp_capabilities" }, ...commands];
    let buf = "";
    let greeted = false;
    s.on("error", reject);
    s.on("data", (d: Buffer) => {
      buf += d.toString();
      for (;;) {
        const i = buf.indexOf("\n");
        if (i < 0) break;
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        const msg = JSON.parse(line) as { QMP?: unknown; return?: unknown; error?: unknown };
        if (msg.error) {
          s.destroy();
          reject(new Error(`QMP: ${JSON.stringify(msg.error)}`));
          return;
        }
        if (!(msg.QMP && !greeted) && msg.return === undefined) continue; // an event
        greeted = true;
        const next = queue.shift();
        if (!next) {
          s.end();
          resolve();
          return;
        }
        s.write(`${JSON.stringify(next)}\n`);
      }
    });
  });
}

describe("sync --watch follows a NIC hot-plugged into the running QEMU guest", () => {
  let vm: Vm | undefined;
  let pod: PtpPod;
  let watch: Watcher | undefined;
  const dir = tempDir("netagent-watch-vm-");
  const qmpPath = dir.join("qmp.sock");
  const mac1 = randomMac();

  beforeAll(async () => {
    ensureGuestImage();
    pod = await PtpPod.create("10.248.251.0/28");
    const spec = loadBootSpec("dist/guest/boot-initramfs.json");
    vm = await Vm.start({
      boot: {
        ...spec,
        qemu: [
          ...spec.qemu,
          "-device",
          "pcie-root-port,id=rp1,chassis=1,slot=1",
          "-qmp",
          `unix:${qmpPath},server=on,wait=off`,
        ],
      },
      mac: await pod.mac(),
      debugConsole: true,
      onNote: (line) => console.log(`vm: ${line}`),
    });
    await vm.waitForAgent(BOOT_TIMEOUT_MS);
  }, BOOT_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    await watch?.child.kill();
    if (vm) await vm.stop();
    await pod?.remove();
    dir.remove();
  }, 60_000);

  /** The guest's addresses and routes, read by its own shell. */
  const guestIp = async () =>
    (await (vm as Vm).console.run("/sbin/ip -o addr show; /sbin/ip route", 60_000)).lines;

  it(
    "the first sync mirrors the pod; a hot-plugged second NIC is followed",
    async () => {
      const addr = (vm as Vm).agentAddress;
      // A TCG guest on a loaded machine can take more than sync's default 10 s
      // per call (the CI run at 36d5f4f, load 20: the first sync was an error).
      watch = await Watcher.start(addr, pod.pod.name, [], STEP_MS, 60);
      expect(watch.resyncs()[0]?.initial, JSON.stringify(watch.events)).toBe(true);
      const podAddr = (await pod.addresses()).find((a) => a.startsWith("10.248.251."));
      expect((await guestIp()).join("\n")).toMatch(new RegExp(`eth0\\s+inet ${podAddr}`));

      await addPodNic(pod.pod, pod.host, "eth1", "hvm1", mac1);
      await pod.pod.ip("addr", "add", "10.14.9.2/24", "dev", "eth1");
      await pod.pod.ip("route", "add", "10.14.128.0/17", "via", "10.14.9.1", "dev", "eth1");
      await qmp(qmpPath, [
        { execute: "netdev_add", arguments: { type: "hubport", id: "net1", hubid: 1 } },
        {
          execute: "device_add",
          arguments: {
            driver: "virtio-net-pci",
            netdev: "net1",
            mac: mac1,
            bus: "rp1",
            id: "nic1",
          },
        },
      ]);
      await watch.next(
        (e) => e.event === "resync" && e.changes.interfacesAdded.some((i) => i.includes(mac1)),
        STEP_MS,
      );
      // Independently of the agent: the guest's own ip, through its shell.
      const text = (await guestIp()).join("\n");
      console.log(`guest# ip -o addr show; ip route\n${text}`);
      expect(text).toMatch(/eth1\s+inet 10\.14\.9\.2\/24/);
      expect(text).toContain("10.14.128.0/17 via 10.14.9.1 dev eth1");
    },
    STEP_MS * 2,
  );
});
