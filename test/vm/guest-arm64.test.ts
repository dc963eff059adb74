/**
 * The arm64 guest end to end, in one boot (qemu-system-aarch64 -M virt,
 * TCG on an x86_64 host): the image `npm run rootfs -- --arch arm64`
 * builds (dist/guest-arm64, its default mode: the erofs root on
 * virtio-blk), netagent answering Check over virtio-serial, the guest's
 * own `uname -m` and ELF loader, then the same pod mirroring as the x86_64
 * guest's (test/vm/pod-mirror.ts) read back through its debug console.
 * Figures go to the log and to dist/vm-figures-arm64.json.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentClient } from "../../src/client/client";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { Vm } from "../../src/host/vm/vm";
import type { ChainPod } from "../host/state-helpers";
import { ensureGuestImage, snapshotGuestImage } from "./image";
import { guestLines, makePod, mirrorAndReadBack } from "./pod-mirror";

const MAC = "52:54:00:0a:f8:64";
const BOOT_TIMEOUT_MS = 300_000;
const STEP_MS = 180_000;
// The first build downloads Debian's arm64 packages and compiles the arm64 agent.
const BUILD_MS = 900_000;

describe("the arm64 guest", () => {
  let vm: Vm;
  let pod: ChainPod;
  let client: AgentClient;
  let imageDir: string;
  const figures: Record<string, number | string> = {};
  const transcript: string[] = [];
  const say = (title: string, text: string) => transcript.push(`## ${title}\n${text.trimEnd()}`);

  beforeAll(async () => {
    const t0 = performance.now();
    ensureGuestImage("arm64");
    figures.imageBuildMs = Math.round(performance.now() - t0);
    const image = snapshotGuestImage("arm64");
    imageDir = image.dir;
    figures.rootImageBytes = statSync(`${imageDir}/root.erofs`).size;
    figures.bootInitrdBytes = statSync(`${imageDir}/boot-initrd.img`).size;
    pod = await makePod(MAC);
    vm = await Vm.start({
      arch: "arm64",
      boot: image.boot(),
      mac: MAC,
      debugConsole: true,
      // The arm64 guest's channel here: virtio-serial, whether or not this host has vhost-vsock.
      channel: "serial",
      onNote: (line) => console.log(`vm: ${line}`),
    });
    figures.accel = `${vm.config.kvm ? "KVM" : "TCG"}: ${vm.accel.why}`;
    figures.firstCheckMs = Math.round(await vm.waitForAgent(BOOT_TIMEOUT_MS));
    client = await vm.connect();
  }, BUILD_MS + BOOT_TIMEOUT_MS);

  afterAll(async () => {
    console.log(`\n${transcript.join("\n\n")}\n`);
    client?.close();
    if (vm) await vm.stop();
    await pod?.remove();
    if (imageDir) rmSync(imageDir, { recursive: true, force: true });
    console.log(`VM figures (arm64): ${JSON.stringify(figures)}`);
    writeFileSync("dist/vm-figures-arm64.json", `${JSON.stringify(figures, null, 2)}\n`);
  }, 60_000);

  it(
    "is an aarch64 machine whose agent answers Check over virtio-serial",
    async () => {
      expect(vm.config.arch).toBe("arm64");
      expect(vm.agentAddress).toMatch(/^unix:\/\//);
      const r = await client.unary(Health.method.check, {}, { timeoutMs: 10_000 });
      expect(r.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      const uname = await guestLines(vm, "uname -m");
      say("guest# uname -m", uname.join("\n"));
      expect(uname).toEqual(["aarch64"]);
      // The agent runs under the aarch64 loader from the image's own libc6.
      const maps = await guestLines(
        vm,
        "grep -o '/lib/.*ld-linux[^ ]*' /proc/$(pidof netagent)/maps | sort -u",
      );
      expect(maps.some((l) => l.includes("ld-linux-aarch64.so.1"))).toBe(true);
    },
    STEP_MS,
  );

  it(
    "runs from the erofs image on virtio-blk, read-only, without DAX",
    async () => {
      const mounts = await guestLines(vm, "cat /proc/mounts");
      const root = mounts.find((l) => l.split(" ")[1] === "/") ?? "";
      say("guest# grep ' / ' /proc/mounts", root);
      expect(root).toMatch(/^\/dev\/vda \/ erofs ro[, ]/);
      expect(root).not.toContain("dax");
      expect(readFileSync(`${imageDir}/boot.json`, "utf8")).toContain(
        "virtio-blk-pci,drive=netagent-root",
      );
      const meminfo = (await guestLines(vm, "cat /proc/meminfo")).join("\n");
      const kib = (name: string) =>
        Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(meminfo)?.[1]);
      figures.memTotalKiB = kib("MemTotal");
      figures.memUsedKiB = kib("MemTotal") - kib("MemAvailable");
      figures.cachedKiB = kib("Cached");
      figures.shmemKiB = kib("Shmem");
      // Nothing of the image is in tmpfs: the agent binary is not copied into RAM.
      expect(kib("Shmem")).toBeLessThan(16 * 1024);
    },
    STEP_MS,
  );

  it(
    "mirrors the ptp + tuning + sbr pod: diff, sync, read back by the guest's own ip and /proc/sys",
    async () => {
      client.close();
      await mirrorAndReadBack(vm, pod, say);
      client = await vm.connect();
    },
    STEP_MS,
  );
});
