/**
 * The pod-mirroring end-to-end step, for a guest of any architecture: the
 * ptp pod (real CNI ptp + tuning + sbr on the host: a rule, table 100,
 * an empty main table, rp_filter 2, arp_ignore 1, MTU 1400) mirrored into
 * a booted QEMU guest by `netagentctl sync` (one netagent.v1 Apply over the
 * agent channel), then read back independently through the guest's debug
 * console (`ip rule`, `ip route show table ...`, /proc/sys read by the
 * guest's shell, not the agent) and compared with the pod's own.
 */
import { spawnSync } from "node:child_process";
import { expect } from "vitest";
import type { Vm } from "../../src/host/vm/vm";
import { expectOnlyGaps } from "../host/complete-helpers";
import { NETAGENTCTL } from "../host/helpers";
import { ChainPod, ptpTuningSbr, sysctl, tableText } from "../host/state-helpers";

function ctl(args: string[]) {
  const r = spawnSync(NETAGENTCTL, args, { encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A command in the guest's debug shell: its output lines; throws on a non-zero exit. */
export async function guestLines(vm: Vm, command: string): Promise<string[]> {
  const r = await vm.console.run(command, 60_000);
  if (r.status !== 0) throw new Error(`guest: ${command}: exit ${r.status}: ${r.lines.join("\n")}`);
  return r.lines.map((l) => l.trim()).filter(Boolean);
}

/** The pod, wired by the CNI chain, its eth0 given `mac` (the guest NIC's, as the runtime does). */
export async function makePod(mac: string): Promise<ChainPod> {
  const pod = await ChainPod.create();
  await pod.attach(ptpTuningSbr());
  await pod.pod.ip("link", "set", "eth0", "address", mac);
  return pod;
}

/**
 * diff says DIFFERENT; sync Applies; the guest's own ip and /proc/sys read
 * back the pod; diff's model comparison then says equal, and its complete
 * one lists what sync does not carry yet and nothing else (SYNC_GAPS).
 * `say` gets each step's transcript.
 */
export async function mirrorAndReadBack(
  vm: Vm,
  pod: ChainPod,
  say: (title: string, text: string) => void,
): Promise<void> {
  const before = ctl(["--addr", vm.agentAddress, "diff", "--netns", pod.pod.name]);
  say("host# netagentctl diff --netns POD", before.stdout + before.stderr);
  expect(before.code, before.stderr).toBe(1);
  expect(before.stdout).toMatch(/^< +32765: from 10\.248\.246\.146\/32 lookup 100/m);

  const sync = ctl(["--addr", vm.agentAddress, "sync", "--netns", pod.pod.name]);
  say("host# netagentctl sync --netns POD", sync.stdout + sync.stderr);
  expect(sync.code, sync.stderr).toBe(0);
  expect(sync.stdout).toContain("with one Apply (netagent.v1.Network)");

  const rules = await guestLines(vm, "ip rule");
  say("guest# ip rule   (the guest's debug console, not the agent)", rules.join("\n"));
  expect(rules).toContain("32765:\tfrom 10.248.246.146 lookup 100");
  const t100 = await guestLines(vm, "ip route show table 100");
  say("guest# ip route show table 100", t100.join("\n"));
  expect(t100).toEqual(await tableText(pod.pod, "100"));
  expect(await guestLines(vm, "ip route show table main")).toEqual([]);
  const sysctls: string[] = [];
  for (const k of ["rp_filter", "arp_ignore"]) {
    const [value] = await guestLines(vm, `cat /proc/sys/net/ipv4/conf/eth0/${k}`);
    sysctls.push(`${k} ${value}`);
    expect(value, k).toBe(await sysctl(pod.pod, `net.ipv4.conf.eth0.${k}`));
  }
  const [mtu] = await guestLines(vm, "cat /sys/class/net/eth0/mtu");
  say(
    "guest# cat /proc/sys/net/ipv4/conf/eth0/{rp_filter,arp_ignore} /sys/class/net/eth0/mtu",
    [...sysctls, `mtu ${mtu}`].join("\n"),
  );
  expect(mtu).toBe("1400");

  const after = ctl(["--addr", vm.agentAddress, "diff", "--netns", pod.pod.name]);
  say("host# netagentctl diff --netns POD", after.stdout + after.stderr);
  expectOnlyGaps(after);
}
