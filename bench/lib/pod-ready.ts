/**
 * Pod network ready, end to end: a real CNI ptp pod is wired on the host
 * before QEMU starts (as a runtime's CNI runs before its sandbox is up), its
 * eth0 given the guest NIC's MAC; once the guest answers Check, the pod is
 * mirrored with `netagentctl sync --netns POD` (one netagent.v1 Apply) and
 * `netagentctl diff --netns POD` must say EQUAL. The figure is QEMU start ->
 * the end of that diff. A diff that is not EQUAL throws with its output: a
 * figure of a guest that is not the pod would be no figure at all.
 */

import type { Vm } from "../../src/host/vm";
import { ctl, PtpPod } from "../../test/host/helpers";

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

/** Sync and diff against a guest whose agent answers; ms from QEMU start to EQUAL. */
export async function syncUntilEqual(vm: Vm, pod: PtpPod): Promise<number> {
  const addr = ["--addr", vm.agentAddress];
  const sync = await ctl([...addr, "sync", "--netns", pod.pod.name], undefined, 300_000);
  if (sync.code !== 0) {
    throw new Error(`netagentctl sync: exit ${sync.code}: ${sync.stdout}${sync.stderr}`);
  }
  const diff = await ctl([...addr, "diff", "--netns", pod.pod.name], undefined, 300_000);
  const at = vm.elapsed();
  if (diff.code !== 0 || !/^verdict: EQUAL/m.test(diff.stdout)) {
    throw new Error(`netagentctl diff: exit ${diff.code}: ${diff.stdout}${diff.stderr}`);
  }
  return at;
}
