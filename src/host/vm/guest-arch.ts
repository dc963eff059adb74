/**
 * The guest architectures: what differs between an x86_64 and an arm64
 * guest, in one table the image builder, the compile script and the VM
 * runner read. Pure.
 */

export type GuestArchName = "x86_64" | "arm64";

export interface GuestArch {
  /** The word of --arch. */
  name: GuestArchName;
  /** `uname -m` inside the guest, and the ELF machine's name. */
  machine: "x86_64" | "aarch64";
  /** ELF e_machine of every executable, library and module in the image (62, 183). */
  elfMachine: number;
  /** Debian's architecture name, for package:arch. */
  debianArch: "amd64" | "arm64";
  /** Debian's multiarch tuple: the library directories' name. */
  multiarch: "x86_64-linux-gnu" | "aarch64-linux-gnu";
  /** bun build --target for the agent. */
  bunTarget: "bun-linux-x64" | "bun-linux-arm64";
  /** The compiled agent and the image's directory (the boot.json contract is there). */
  agent: string;
  guestDir: string;
  qemu: "qemu-system-x86_64" | "qemu-system-aarch64";
  /** The serial console's tty in the guest (console=...). */
  console: "ttyS0" | "ttyAMA0";
  /** process.arch of a host that can run this guest under KVM. */
  hostArch: "x64" | "arm64";
}

export const GUEST_ARCHES: Readonly<Record<GuestArchName, GuestArch>> = {
  x86_64: {
    name: "x86_64",
    machine: "x86_64",
    elfMachine: 62,
    debianArch: "amd64",
    multiarch: "x86_64-linux-gnu",
    bunTarget: "bun-linux-x64",
    agent: "dist/netagent",
    guestDir: "dist/guest",
    qemu: "qemu-system-x86_64",
    console: "ttyS0",
    hostArch: "x64",
  },
  arm64: {
    name: "arm64",
    machine: "aarch64",
    elfMachine: 183,
    debianArch: "arm64",
    multiarch: "aarch64-linux-gnu",
    bunTarget: "bun-linux-arm64",
    agent: "dist/netagent-arm64",
    guestDir: "dist/guest-arm64",
    qemu: "qemu-system-aarch64",
    // -M virt's PL011 UART.
    console: "ttyAMA0",
    hostArch: "arm64",
  },
};

/** The architecture named by `value` (x86_64 or arm64); throws naming `from` and the value. */
export function parseGuestArch(value: string, from = "--arch"): GuestArch {
  const arch = Object.hasOwn(GUEST_ARCHES, value)
    ? GUEST_ARCHES[value as GuestArchName]
    : undefined;
  if (!arch) throw new Error(`${from}: expected x86_64 or arm64, got ${JSON.stringify(value)}`);
  return arch;
}
