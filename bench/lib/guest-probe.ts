/**
 * One guest's memory and boot figures, for the VM row: boots a boot
 * description under QEMU with the debug shell, waits for the first answered
 * Check, lets the agent sit idle, then reads /proc/meminfo and the agent's
 * status inside the guest (through the serial console, not the agent) and
 * the QEMU process's Pss on the host (/proc/PID/smaps_rollup). With a pod
 * (pod-ready.ts), the guest is synced to it right after the first Check and
 * the figures are read after that. VMs are stopped by their own PID.
 */
import { readFileSync } from "node:fs";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import type { BootSpec } from "../../src/host/vm/boot-spec";
import { Vm } from "../../src/host/vm/vm";
import type { PtpPod } from "../../test/host/helpers";
import { readyPod, syncUntilEqual } from "./pod-ready";

export interface GuestFigures {
  /** QEMU spawned -> first answered Check, ms. */
  firstCheckMs: number;
  /** QEMU spawned -> the guest equal to the ptp pod (sync, diff EQUAL), ms; NaN without a pod. */
  podReadyMs: number;
  /** The accelerator the guest ran under (the runner's probes, not /dev/kvm's existence). */
  kvm: boolean;
  memTotalKiB: number;
  memAvailableKiB: number;
  /** MemTotal - MemAvailable. */
  usedKiB: number;
  shmemKiB: number;
  cachedKiB: number;
  agentRssAnonKiB: number;
  agentRssFileKiB: number;
  /** The QEMU process's proportional set size on the host. */
  qemuPssKiB: number;
  /** Resident pages of QEMU's mapping of the root image (0 without one): the guest's DAX reads. */
  imageRssKiB: number;
}

const BOOT_TIMEOUT_MS = 300_000;

/** Fields of /proc/meminfo or /proc/PID/status style text, in kB. */
export function parseKiB(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^(\w+):\s+(\d+) kB$/gm)) out.set(m[1] as string, Number(m[2]));
  return out;
}

function field(fields: Map<string, number>, name: string, where: string): number {
  const v = fields.get(name);
  if (v === undefined) throw new Error(`no ${name} in ${where}`);
  return v;
}

/** The Pss of a host process, from /proc/PID/smaps_rollup. */
export function pssKiB(pid: number): number {
  return field(parseKiB(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8")), "Pss", "smaps_rollup");
}

/** Rss of `pid`'s mappings of `file`, from /proc/PID/smaps. */
export function mappedRssKiB(pid: number, file: string): number {
  let inFile = false;
  let sum = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.endsWith(` ${file}`);
    else if (inFile && line.startsWith("Rss:")) sum += Number(/(\d+) kB/.exec(line)?.[1] ?? 0);
  }
  return sum;
}

export interface BootedGuest {
  vm: Vm;
  firstCheckMs: number;
  podReadyMs: number;
}

/**
 * A booted guest with the agent answering and its shell at the prompt;
 * with `pod` (wired before QEMU starts), synced to it first.
 */
export async function bootGuest(
  boot: BootSpec,
  mac: string,
  pod?: PtpPod,
  ctl?: string,
): Promise<BootedGuest> {
  const vm = await Vm.start({ boot, mac, debugConsole: true });
  try {
    const firstCheckMs = await vm.waitForAgent(BOOT_TIMEOUT_MS);
    const podReadyMs = pod ? await syncUntilEqual(vm, pod, ctl) : Number.NaN;
    await vm.console.waitFor(SHELL_PROMPT, BOOT_TIMEOUT_MS);
    return { vm, firstCheckMs, podReadyMs };
  } catch (err) {
    await vm.stop();
    throw err;
  }
}

/** Reads the figures of a running guest (its agent idle by now). */
export async function readGuest(guest: BootedGuest, image?: string): Promise<GuestFigures> {
  const { vm, firstCheckMs, podReadyMs } = guest;
  const mem = parseKiB((await vm.console.run("cat /proc/meminfo")).lines.join("\n"));
  const st = parseKiB(
    (await vm.console.run("cat /proc/$(pidof netagent)/status")).lines.join("\n"),
  );
  const total = field(mem, "MemTotal", "meminfo");
  const available = field(mem, "MemAvailable", "meminfo");
  return {
    firstCheckMs,
    podReadyMs,
    kvm: vm.config.kvm,
    memTotalKiB: total,
    memAvailableKiB: available,
    usedKiB: total - available,
    shmemKiB: field(mem, "Shmem", "meminfo"),
    cachedKiB: field(mem, "Cached", "meminfo"),
    agentRssAnonKiB: field(st, "RssAnon", "agent status"),
    agentRssFileKiB: field(st, "RssFile", "agent status"),
    qemuPssKiB: pssKiB(vm.pid),
    imageRssKiB: image === undefined ? 0 : mappedRssKiB(vm.pid, image),
  };
}

/**
 * Boots `count` guests of one boot description side by side, idles, reads
 * all, stops all. With `withPod` each gets a ptp pod of its own, wired
 * before its QEMU starts (one guest at a time: the pods share a subnet),
 * synced with `ctl` (default dist/netagentctl).
 */
export async function measureGuests(
  boot: BootSpec,
  count: number,
  idleMs: number,
  withPod = false,
  ctl?: string,
): Promise<GuestFigures[]> {
  if (withPod && count !== 1) throw new Error("measureGuests: a pod for one guest only");
  const macs = Array.from(
    { length: count },
    (_, i) => `52:54:00:0b:00:${(i + 1).toString(16).padStart(2, "0")}`,
  );
  const pod = withPod ? await readyPod(macs[0] as string) : undefined;
  try {
    const started = await Promise.allSettled(macs.map((mac) => bootGuest(boot, mac, pod, ctl)));
    const guests = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    try {
      const failed = started.find((s) => s.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
      await Bun.sleep(idleMs);
      const out: GuestFigures[] = [];
      for (const guest of guests) out.push(await readGuest(guest, boot.image));
      return out;
    } finally {
      await Promise.all(guests.map(({ vm }) => vm.stop()));
    }
  } finally {
    await pod?.remove();
  }
}
