/**
 * The whole pod network end to end in a real VM (x86_64, initramfs mode):
 * a CNI ptp + tuning + sbr pod mirrored into the QEMU guest by `netagentctl sync` and
 * read back through the guest's debug console (test/vm/pod-mirror.ts; the
 * arm64 guest runs the same step in guest-arm64.test.ts); then a tun
 * device added to the pod, made in the guest by the next sync. The
 * transcript goes to the log.
 */
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Vm } from "../../src/host/vm/vm";
import { NETAGENTCTL } from "../host/helpers";
import { type ChainPod, tableText } from "../host/state-helpers";
import { ensureGuestImage, snapshotGuestImage } from "./image";
import { guestLines, makePod, mirrorAndReadBack } from "./pod-mirror";

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

  it(
    "a tun device in the pod: the image's kernel has tun (loaded at boot), sync makes it with its address and route",
    async () => {
      const p = pod.pod;
      await p.ip("tuntap", "add", "dev", "tun0", "mode", "tun");
      await p.ip("addr", "add", "10.9.0.1/24", "dev", "tun0");
      await p.ip("link", "set", "tun0", "up");
      await p.ip("route", "add", "10.99.0.0/16", "dev", "tun0", "table", "100");
      const r = spawnSync(NETAGENTCTL, ["--addr", vm.agentAddress, "sync", "--netns", p.name], {
        encoding: "utf8",
        timeout: 120_000,
      });
      say("host# netagentctl sync --netns POD   (tun0 added)", r.stdout + r.stderr);
      expect(r.status, r.stdout + r.stderr).toBe(0);
      const [json] = await guestLines(vm, "ip -d -j link show tun0");
      say("guest# ip -d -j link show tun0", json ?? "");
      const [podTun] = await p.json<{ linkinfo?: unknown }[]>("link", "show", "tun0");
      expect((JSON.parse(json ?? "[]") as { linkinfo?: unknown }[])[0]?.linkinfo).toEqual(
        podTun?.linkinfo,
      );
      const t100 = await guestLines(vm, "ip route show table 100");
      say("guest# ip route show table 100", t100.join("\n"));
      expect(t100).toEqual(await tableText(p, "100"));
      expect(await guestLines(vm, "ip -4 -o addr show dev tun0")).toEqual([
        expect.stringMatching(/ inet 10\.9\.0\.1\/24 /),
      ]);
    },
    STEP_MS,
  );
});
