/**
 * The whole pod network end to end in a real VM: the issue-11 pod (real CNI
 * ptp + tuning + sbr on the host: a rule, table 100, an empty main table,
 * rp_filter 2, arp_ignore 1, MTU 1400) mirrored into the QEMU guest by
 * `netagentctl sync` (one netagent.v1 Apply over the agent channel), then
 * read back independently through the guest's debug console (`ip rule`,
 * `ip route show table ...`, /proc/sys read by the guest's shell, not the
 * agent) and compared with the pod's own. The transcript goes to the log.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Vm } from "../../src/host/vm";
import { NETAGENTCTL } from "../host/helpers";
import { ChainPod, ptpTuningSbr, sysctl, tableText } from "../host/state-helpers";
import { ensureGuestImage } from "./image";

const MAC = "52:54:00:0a:f8:11";
const BOOT_TIMEOUT_MS = 300_000;
// A TCG guest on two shared cores: each step gets minutes.
const STEP_MS = 180_000;

function ctl(args: string[]) {
  const r = spawnSync(NETAGENTCTL, args, { encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the ptp + tuning + sbr pod mirrored into the QEMU guest", () => {
  let vm: Vm;
  let pod: ChainPod;
  let imageDir: string;
  const transcript: string[] = [];
  const say = (title: string, text: string) => transcript.push(`## ${title}\n${text.trimEnd()}`);

  beforeAll(async () => {
    ensureGuestImage();
    imageDir = mkdtempSync(join(tmpdir(), "netagent-image-"));
    const kernel = existsSync("dist/guest/vmlinux") ? "vmlinux" : "vmlinuz";
    copyFileSync(`dist/guest/${kernel}`, `${imageDir}/${kernel}`);
    copyFileSync("dist/guest/initrd.img", `${imageDir}/initrd.img`);
    pod = await ChainPod.create();
    await pod.attach(ptpTuningSbr());
    // The guest's NIC has the pod's MAC, as the runtime gives it.
    await pod.pod.ip("link", "set", "eth0", "address", MAC);
    vm = await Vm.start({
      kernel: `${imageDir}/${kernel}`,
      initrd: `${imageDir}/initrd.img`,
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

  /** A command in the guest's debug shell: its output lines; throws on a non-zero exit. */
  async function guest(command: string): Promise<string[]> {
    const r = await vm.console.run(command, 60_000);
    if (r.status !== 0)
      throw new Error(`guest: ${command}: exit ${r.status}: ${r.lines.join("\n")}`);
    return r.lines.map((l) => l.trim()).filter(Boolean);
  }

  it(
    "diff says DIFFERENT; sync Applies; the guest's own ip and /proc/sys read back the pod",
    async () => {
      const before = ctl(["--addr", vm.agentAddress, "diff", "--netns", pod.pod.name]);
      say("host# netagentctl diff --netns POD", before.stdout + before.stderr);
      expect(before.code, before.stderr).toBe(1);
      expect(before.stdout).toMatch(/^< +32765: from 10\.248\.246\.146\/32 lookup 100/m);

      const sync = ctl(["--addr", vm.agentAddress, "sync", "--netns", pod.pod.name]);
      say("host# netagentctl sync --netns POD", sync.stdout + sync.stderr);
      expect(sync.code, sync.stderr).toBe(0);
      expect(sync.stdout).toContain("with one Apply (netagent.v1.Network)");

      const rules = await guest("ip rule");
      say("guest# ip rule   (the guest's debug console, not the agent)", rules.join("\n"));
      expect(rules).toContain("32765:\tfrom 10.248.246.146 lookup 100");
      const t100 = await guest("ip route show table 100");
      say("guest# ip route show table 100", t100.join("\n"));
      expect(t100).toEqual(await tableText(pod.pod, "100"));
      expect(await guest("ip route show table main")).toEqual([]);
      for (const k of ["rp_filter", "arp_ignore"]) {
        const [value] = await guest(`cat /proc/sys/net/ipv4/conf/eth0/${k}`);
        expect(value, k).toBe(await sysctl(pod.pod, `net.ipv4.conf.eth0.${k}`));
      }
      expect((await guest("cat /sys/class/net/eth0/mtu"))[0]).toBe("1400");

      const after = ctl(["--addr", vm.agentAddress, "diff", "--netns", pod.pod.name]);
      say("host# netagentctl diff --netns POD", after.stdout + after.stderr);
      expect(after.code, after.stdout + after.stderr).toBe(0);
      expect(after.stdout).toContain("verdict: EQUAL");
    },
    STEP_MS,
  );
});
