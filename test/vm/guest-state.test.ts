/**
 * The whole pod network end to end in a real VM (x86_64, initramfs mode):
 * the issue-11 pod mirrored into the QEMU guest by `netagentctl sync` and
 * read back through the guest's debug console (test/vm/pod-mirror.ts; the
 * arm64 guest runs the same step in guest-arm64.test.ts). The transcript
 * goes to the log.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, it } from "vitest";
import { Vm } from "../../src/host/vm";
import type { ChainPod } from "../host/state-helpers";
import { ensureGuestImage, snapshotGuestImage } from "./image";
import { makePod, mirrorAndReadBack } from "./pod-mirror";

const MAC = "52:54:00:0a:f8:11";
const BOOT_TIMEOUT_MS = 300_000;
// A TCG guest on two shared cores: each step gets minutes.
const STEP_MS = 180_000;

describe("the ptp + tuning + sbr pod mirrored into the QEMU guest", () => {
  let vm: Vm;
  let pod: ChainPod;
  let imageDir: string;
  const transcript: string[] = [];
  const say = (title: string, text: string) => transcript.push(`## ${title}\n${text.trimEnd()}`);

  beforeAll(async () => {
    ensureGuestImage();
    const image = snapshotGuestImage();
    imageDir = image.dir;
    pod = await makePod(MAC);
    vm = await Vm.start({
      boot: image.boot("initramfs"),
      mac: MAC,
      debugConsole: true,
      onNote: (line) => console.log(`vm: ${line}`),
    });
    await vm.waitForAgent(BOOT_TIMEOUT_MS);
  }, BOOT_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    console.log(`\n${transcript.join("\n\n")}\n`);
    if (vm) await vm.stop();
    await pod?.remove();
    if (imageDir) rmSync(imageDir, { recursive: true, force: true });
  }, 60_000);

  it(
    "diff says DIFFERENT; sync Applies; the guest's own ip and /proc/sys read back the pod",
    () => mirrorAndReadBack(vm, pod, say),
    STEP_MS,
  );
});
