/**
 * What the image is built from, wherever it was found: the build host's
 * own installed files (host-sources.ts, an x86_64 guest on an x86_64
 * host) or Debian packages of another architecture unpacked in a cache
 * (debian-sources.ts). build.ts makes the same image from either.
 */
import type { IptablesInputs } from "./iptables";

export interface GuestSources {
  /** `uname -r` of the guest kernel. */
  release: string;
  /** Host directory of its modules, with modules.dep and modules.builtin. */
  modulesDir: string;
  /** The kernel as its package ships it (/boot/vmlinuz-RELEASE), and its config's text. */
  kernel: string;
  kernelConfig: string;
  /** The static busybox, and its applets (`busybox --list-full`). */
  busybox: string;
  applets: string[];
  /** iproute2's ip. */
  ip: string;
  iptables: IptablesInputs;
  /** The shared objects the agent, ip and iptables need (image path and host file). */
  libraries: { path: string; source: string }[];
  /** The Debian package of each host path it knows, asked once for all. */
  packagesOf: (paths: readonly string[]) => Map<string, string>;
}
