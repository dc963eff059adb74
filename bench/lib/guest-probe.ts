/**
 * One guest's memory and boot figures, for the VM row: boots a boot
 * description under QEMU with the debug shell, waits for the first answered
 * Check, lets the agent sit idle, then reads /proc/meminfo and the agent's
 * status inside the guest (through the serial console, not the agent) and
 * the QEMU process's Pss on the host (/proc/PID/smaps_rollup). VMs are
 * stopped by their own PID.
 */
import { readFileSync } from "node:fs";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import type { BootSpec } from "../../src/host/boot-spec";
import { Vm } from "../../src/host/vm";

export interface GuestFigures {
  /** QEMU spawned -> first answered Check, ms. */
  firstCheckMs: number;
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

/** A booted guest with the agent answering and its shell at the prompt. */
export async function bootGuest(
  boot: BootSpec,
  mac: string,
): Promise<{ vm: Vm; firstCheckMs: number }> {
  const vm = await Vm.start({ boot, mac, debugConsole: true });
  try {
    const firstCheckMs = await vm.waitForAgent(BOOT_TIMEOUT_MS);
    await vm.console.waitFor(SHELL_PROMPT, BOOT_TIMEOUT_MS);
    return { vm, firstCheckMs };
  } catch (err) {
    await vm.stop();
    throw err;
  }
}

/** Reads the figures of a running guest (its agent idle by now). */
export async function readGuest(
  vm: Vm,
  firstCheckMs: number,
  image?: string,
): Promise<GuestFigures> {
  const mem = parseKiB((await vm.console.run("cat /proc/meminfo")).lines.join("\n"));
  const st = parseKiB(
    (await vm.console.run("cat /proc/$(pidof netagent)/status")).lines.join("\n"),
  );
  const total = field(mem, "MemTotal", "meminfo");
  const available = field(mem, "MemAvailable", "meminfo");
  return {
    firstCheckMs,
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

/** Boots `count` guests of one boot description side by side, idles, reads all, stops all. */
export async function measureGuests(
  boot: BootSpec,
  count: number,
  idleMs: number,
): Promise<GuestFigures[]> {
  const macs = Array.from(
    { length: count },
    (_, i) => `52:54:00:0b:00:${(i + 1).toString(16).padStart(2, "0")}`,
  );
  const started = await Promise.allSettled(macs.map((mac) => bootGuest(boot, mac)));
  const vms = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  try {
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    await Bun.sleep(idleMs);
    const out: GuestFigures[] = [];
    for (const { vm, firstCheckMs } of vms) out.push(await readGuest(vm, firstCheckMs, boot.image));
    return out;
  } finally {
    await Promise.all(vms.map(({ vm }) => vm.stop()));
  }
}
