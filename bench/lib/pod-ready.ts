/**
 * Pod network ready, end to end: a real CNI ptp pod is wired on the host
 * before QEMU starts (as a runtime's CNI runs before its sandbox is up), its
 * eth0 given the guest NIC's MAC; once the guest answers Check, the pod is
 * mirrored with `netagentctl sync --netns POD` (one netagent.v1 Apply) and
 * `netagentctl diff --netns POD` must say EQUAL. The figure is QEMU start ->
 * the end of that diff. A diff that is not EQUAL throws with its output: a
 * figure of a guest that is not the pod would be no figure at all.
 */

import { execFile } from "node:child_process";
import type { Vm } from "../../src/host/vm/vm";
import { NETAGENTCTL, PtpPod } from "../../test/host/helpers";

/** `ctl ARGS`: exit code and output (a non-zero exit is a result, not a throw). */
function run(ctl: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(ctl, args, { timeout: 300_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

/** The pod, wired, its eth0 carrying `mac`. The caller removes it (`pod.remove()`). */
export async function readyPod(mac: string): Promise<PtpPod> {
  const pod = await PtpPod.create();
  try {
    await pod.pod.ip("link", "set", "eth0", "address", mac);
    return pod;
  } catch (err) {
    await pod.remove();
    throw err;
  }
}

/**
 * Sync and diff against a guest whose agent answers; ms from QEMU start to
 * EQUAL. `ctl`: another build's netagentctl, for a guest of that build.
 */
export async function syncUntilEqual(vm: Vm, pod: PtpPod, ctl = NETAGENTCTL): Promise<number> {
  const addr = ["--addr", vm.agentAddress];
  const sync = await run(ctl, [...addr, "sync", "--netns", pod.pod.name]);
  if (sync.code !== 0) throw new Error(`netagentctl sync: exit ${sync.code}: ${sync.out}`);
  const diff = await run(ctl, [...addr, "diff", "--netns", pod.pod.name]);
  const at = vm.elapsed();
  if (diff.code !== 0 || !/^verdict: EQUAL/m.test(diff.out)) {
    throw new Error(`netagentctl diff: exit ${diff.code}: ${diff.out}`);
  }
  return at;
}
