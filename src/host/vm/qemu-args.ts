/**
 * The QEMU command line and kernel command line for a netagent guest. Pure:
 * the VM runner decides KVM and the agent channel from the host, this turns
 * the decision into arguments. The guest's only NIC is a virtio-net device
 * on a private QEMU hub with nothing else attached, so no guest packet can
 * leave QEMU.
 */

import { GUEST_ARCHES, type GuestArchName } from "./guest-arch";

export interface GuestConfig {
  /** The guest's architecture (default x86_64): machine, console, CPU. */
  arch?: GuestArchName;
  kernel: string;
  initrd: string;
  memoryMiB: number;
  cpus: number;
  /** KVM (`-accel kvm -cpu host`) or TCG (`-cpu max`). */
  kvm: boolean;
  /** MAC of the virtio-net NIC, lower or upper case. */
  mac: string;
  /**
   * The agent channel: a virtio-serial port named agent.channel.0 backed by
   * a unix socket on the host, or vhost-vsock with the given guest CID.
   */
  channel: { kind: "serial"; socket: string } | { kind: "vsock"; cid: number };
  /** Start netagent at all (`init.noagent` when false). */
  startAgent: boolean;
  /** A root shell on the serial console (`agent.debug_console`). */
  debugConsole: boolean;
  /** agent.log= level, when set. */
  logLevel?: string;
  /** Kernel messages on the console (`quiet` when false). */
  kernelMessages: boolean;
  extraCmdline?: readonly string[];
  /** More QEMU arguments, last: e.g. a boot.json's, attaching the root image. */
  extraQemu?: readonly string[];
}

export const SERIAL_PORT_NAME = "agent.channel.0";
const VSOCK_PORT = 1024;

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

/** Throws unless `mac` is six colon-separated octets of a unicast address. */
export function checkMac(mac: string): string {
  if (!MAC.test(mac)) throw new Error(`invalid MAC ${JSON.stringify(mac)}`);
  if (Number.parseInt(mac.slice(0, 2), 16) & 1) {
    throw new Error(`MAC ${mac} is a multicast address`);
  }
  return mac.toLowerCase();
}

/** The address the agent listens on inside the guest. */
function guestListenAddress(config: GuestConfig): string {
  return config.channel.kind === "serial"
    ? `serial://${SERIAL_PORT_NAME}`
    : `vsock://-1:${VSOCK_PORT}`;
}

/** The address a host client dials to reach the agent. */
export function hostAgentAddress(config: GuestConfig): string {
  return config.channel.kind === "serial"
    ? `unix://${config.channel.socket}`
    : `vsock://${config.channel.cid}:${VSOCK_PORT}`;
}

export function kernelCmdline(config: GuestConfig): string {
  const x86 = (config.arch ?? "x86_64") === "x86_64";
  const words = [
    `console=${GUEST_ARCHES[config.arch ?? "x86_64"].console}`,
    // A dead init panics; reboot at once, and -no-reboot turns that into QEMU's exit.
    "panic=-1",
    // The kernel checks the IO-APIC timer by counting ticks over a short
    // busy-wait; a TCG guest on a loaded host misses them and panics ("IO-APIC
    // + timer doesn't work!", seen on a shared 2-core machine). Kata's
    // guests skip the check too. x86 only: arm64 has no IO-APIC.
    x86 ? "no_timer_check" : "",
    config.kernelMessages ? "" : "quiet",
    `agent.server_addr=${guestListenAddress(config)}`,
    config.logLevel ? `agent.log=${config.logLevel}` : "",
    config.debugConsole ? "agent.debug_console" : "",
    config.startAgent ? "" : "init.noagent",
    // Under TCG every JIT-compiled page is new code QEMU must translate
    // again, which doubles the agent's start-up; with KVM the JIT pays.
    config.kvm ? "" : "init.nojit",
    ...(config.extraCmdline ?? []),
  ];
  for (const w of words) {
    if (/\s/.test(w)) throw new Error(`kernel command line word ${JSON.stringify(w)} has spaces`);
  }
  return words.filter(Boolean).join(" ");
}

/**
 * Arguments for qemu-system-x86_64 (q35), or qemu-system-aarch64 (-M virt:
 * its PL011 is the serial console, its generic PCIe host takes the same
 * virtio-*-pci devices; GIC version the best the accelerator offers). The
 * serial console is QEMU's stdin and stdout (`-chardev stdio`), so whoever
 * spawns QEMU drives it and sees every byte from the first; the monitor is off.
 */
export function qemuArgs(config: GuestConfig): string[] {
  const mac = checkMac(config.mac);
  if (!(config.memoryMiB >= 128)) throw new Error(`memory ${config.memoryMiB} MiB: at least 128`);
  if (!(config.cpus >= 1)) throw new Error(`cpus ${config.cpus}: at least 1`);
  const channel =
    config.channel.kind === "serial"
      ? [
          "-device",
          "virtio-serial-pci,id=vser0",
          "-chardev",
          `socket,id=agent0,path=${config.channel.socket},server=on,wait=off`,
          "-device",
          `virtserialport,bus=vser0.0,chardev=agent0,name=${SERIAL_PORT_NAME}`,
        ]
      : ["-device", `vhost-vsock-pci,guest-cid=${config.channel.cid}`];
  return [
    "-machine",
    (config.arch ?? "x86_64") === "x86_64" ? "q35" : "virt,gic-version=max",
    ...(config.kvm ? ["-accel", "kvm", "-cpu", "host"] : ["-accel", "tcg", "-cpu", "max"]),
    "-m",
    String(config.memoryMiB),
    "-smp",
    String(config.cpus),
    "-nodefaults",
    "-no-user-config",
    "-nographic",
    "-monitor",
    "none",
    "-no-reboot",
    "-kernel",
    config.kernel,
    "-initrd",
    config.initrd,
    "-append",
    kernelCmdline(config),
    "-chardev",
    "stdio,id=console0,signal=off",
    "-serial",
    "chardev:console0",
    // A hub with one port: the NIC's frames go nowhere, never to the host's network.
    "-netdev",
    "hubport,id=net0,hubid=0",
    "-device",
    `virtio-net-pci,netdev=net0,mac=${mac}`,
    ...channel,
    ...(config.extraQemu ?? []),
  ];
}
