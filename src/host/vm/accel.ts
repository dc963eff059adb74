/**
 * Which accelerator a guest boots under. A /dev/kvm that exists says little:
 * it can be unopenable, refuse to create a VM, or create one whose guest
 * hangs (a CPU without vmx/svm behind a passed-through device). So the
 * choice rests on facts read by `probeKvm` (open, KVM_CREATE_VM, the CPU's
 * flags) and made by the pure `chooseAccel`; the VM runner's boot watchdog
 * then checks that a KVM guest really runs.
 */
import { closeSync, openSync, readFileSync } from "node:fs";
import { libcIoctl } from "../../process/libc-ioctl";
import type { GuestArch } from "./guest-arch";

/** What was asked for: `auto` (KVM if it works, else TCG), or one of them only. */
export type AccelMode = "auto" | "kvm" | "tcg";

export interface AccelRequest {
  mode: AccelMode;
  /** Where the mode came from, for messages: "--accel", "NETAGENT_ACCEL", "default". */
  from: string;
}

/** What the host says about KVM; read by probeKvm, or made up by tests. */
export interface KvmFacts {
  device: string;
  /** Why the device did not open read-write (e.g. ENOENT, EACCES); absent when it did. */
  openError?: string;
  /** The KVM_CREATE_VM ioctl: "ok", the errno it failed with, or absent when not tried. */
  createVm?: string;
  /** "vmx" or "svm" from /proc/cpuinfo's flags, "" when neither is there. */
  cpuFlag: string;
}

export interface AccelChoice {
  kvm: boolean;
  /** Watch the boot: a KVM guest that stays silent is stopped. */
  watchdog: boolean;
  /** One line: what was chosen and why. */
  why: string;
}

const MODES: readonly string[] = ["auto", "kvm", "tcg"];

/** Validates a mode from a flag or the environment; throws naming the source and value. */
export function parseAccelMode(value: string, from: string): AccelRequest {
  if (!MODES.includes(value)) {
    throw new Error(`${from}: expected auto, kvm or tcg, got ${JSON.stringify(value)}`);
  }
  return { mode: value as AccelMode, from };
}

/** The request from `flag` when given, else NETAGENT_ACCEL when set, else auto. */
export function accelRequest(flag?: AccelMode, env = process.env.NETAGENT_ACCEL): AccelRequest {
  if (flag) return parseAccelMode(flag, "--accel");
  if (env) return parseAccelMode(env, "NETAGENT_ACCEL");
  return { mode: "auto", from: "default" };
}

/** "vmx", "svm" or "" from the text of /proc/cpuinfo. */
export function cpuVirtFlag(cpuinfo: string): string {
  for (const line of cpuinfo.split("\n")) {
    if (!/^flags\s*:/.test(line)) continue;
    const flags = line
      .slice(line.indexOf(":") + 1)
      .trim()
      .split(/\s+/);
    if (flags.includes("vmx")) return "vmx";
    if (flags.includes("svm")) return "svm";
  }
  return "";
}

/**
 * What is wrong with KVM on this host, or "" when every probe passed. The
 * vmx/svm flag is an x86 fact; an arm64 host's cpuinfo has no such flag.
 */
function kvmProblem(f: KvmFacts, x86 = true): string {
  if (f.openError) return `${f.device} does not open (${f.openError})`;
  if (f.createVm === undefined) return `KVM_CREATE_VM not tried (no bun:ffi)`;
  if (f.createVm !== "ok") return `KVM_CREATE_VM on ${f.device} fails (${f.createVm})`;
  if (x86 && !f.cpuFlag) return "the CPU advertises no vmx/svm in /proc/cpuinfo";
  return "";
}

/** The guest's architecture and the host's (process.arch): KVM runs only its own. */
export interface AccelTarget {
  guest: Pick<GuestArch, "name" | "hostArch">;
  hostArch: string;
}

/** Why KVM cannot run this guest at all on this host, or "" when it might. */
function archProblem(target: AccelTarget | undefined): string {
  if (!target || target.guest.hostArch === target.hostArch) return "";
  return `an ${target.guest.name} guest on an ${target.hostArch} host (KVM runs only the host's own architecture)`;
}

/**
 * Decides the accelerator from the request and the probe's facts (null
 * only for `tcg`, which never looks at KVM). `auto` takes KVM only when
 * every probe passed, with the watchdog. `kvm` takes KVM even on a CPU
 * without the flag (the watchdog then decides), but throws when the device
 * does not open or cannot create a VM: that guest could not even start.
 */
export function chooseAccel(
  request: AccelRequest,
  facts: KvmFacts | null,
  target?: AccelTarget,
): AccelChoice {
  const asked = request.from === "default" ? "auto (default)" : `${request.from} ${request.mode}`;
  if (request.mode === "tcg") return { kvm: false, watchdog: false, why: asked };
  const foreign = archProblem(target);
  if (foreign && request.mode === "auto")
    return { kvm: false, watchdog: false, why: `${asked}: ${foreign}` };
  if (foreign) throw new Error(`${asked}: cannot use KVM: ${foreign}`);
  if (!facts) throw new Error(`${asked}: KVM facts missing`);
  const problem = kvmProblem(facts, (target?.guest.name ?? "x86_64") === "x86_64");
  if (request.mode === "auto") {
    if (problem) return { kvm: false, watchdog: false, why: `${asked}: ${problem}` };
    return {
      kvm: true,
      watchdog: true,
      why: `${asked}: ${facts.device} opens, KVM_CREATE_VM works, the CPU has ${facts.cpuFlag}`,
    };
  }
  if (facts.openError || facts.createVm !== "ok") {
    throw new Error(`${asked}: cannot use KVM: ${problem}`);
  }
  return { kvm: true, watchdog: true, why: problem ? `${asked}, although ${problem}` : asked };
}

/**
 * chooseAccel with the facts read only when the mode needs them; `guest`
 * (default: the host's own x86_64) against this process's architecture.
 */
export async function decideAccel(
  request: AccelRequest,
  probe: () => KvmFacts | Promise<KvmFacts> = () => probeKvm(),
  guest?: GuestArch,
): Promise<AccelChoice> {
  const target = guest ? { guest, hostArch: process.arch } : undefined;
  const skip = request.mode === "tcg" || archProblem(target) !== "";
  return chooseAccel(request, skip ? null : await probe(), target);
}

const KVM_GET_API_VERSION = 0xae00;
const KVM_CREATE_VM = 0xae01;
const ERRNO: Record<number, string> = {
  1: "EPERM",
  12: "ENOMEM",
  13: "EACCES",
  22: "EINVAL",
  25: "ENOTTY",
};

/**
 * Reads the facts: opens `device` read-write, asks it for the API version
 * and to create a VM (closing the VM at once), and reads the CPU's flags
 * from `cpuinfo`. Never throws; every failure is a fact.
 */
export async function probeKvm(device = "/dev/kvm", cpuinfo = "/proc/cpuinfo"): Promise<KvmFacts> {
  let cpuFlag = "";
  try {
    cpuFlag = cpuVirtFlag(readFileSync(cpuinfo, "utf8"));
  } catch {
    // No cpuinfo: no flag.
  }
  let fd: number;
  try {
    fd = openSync(device, "r+");
  } catch (err) {
    return { device, openError: (err as NodeJS.ErrnoException).code ?? String(err), cpuFlag };
  }
  try {
    const ioctl = await libcIoctl();
    if (!ioctl) return { device, cpuFlag };
    const name = (errno: number) => ERRNO[errno] ?? `errno ${errno}`;
    const [version, verErr] = ioctl(fd, KVM_GET_API_VERSION);
    if (version < 0) return { device, createVm: `KVM_GET_API_VERSION: ${name(verErr)}`, cpuFlag };
    const [vm, vmErr] = ioctl(fd, KVM_CREATE_VM);
    if (vm < 0) return { device, createVm: name(vmErr), cpuFlag };
    closeSync(vm);
    return { device, createVm: "ok", cpuFlag };
  } finally {
    closeSync(fd);
  }
}
