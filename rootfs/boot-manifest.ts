/**
 * Image mode: what goes into the small boot initramfs that reaches the
 * read-only root image (busybox, the modules for virtio-pmem and erofs, and
 * rootfs/boot-init.sh as /init). Pure, like manifest.ts: the executor
 * passes in what it probed on the host.
 */
import { checkManifest, type Entry, withParents } from "./manifest";

/**
 * The modules the boot initramfs loads, dependencies resolved from
 * modules.dep. crc32c_generic is named because nothing depends on it by
 * symbol: libcrc32c asks the crypto API for "crc32c" at load time, which
 * would need modprobe; without it erofs fails with "Unknown symbol crc32c".
 */
export const BOOT_MODULES = ["virtio_pci", "virtio_pmem", "nd_pmem", "crc32c_generic", "erofs"];
export const BOOT_MODULES_LIST = "/etc/boot.modules";

/** How the boot initramfs reaches the root image: the device, its mount options, the modules. */
export interface RootDevice {
  device: string;
  options: string;
  modules: readonly string[];
}

/** virtio-pmem, mapped with DAX: the image's pages are the host's page cache. */
export const PMEM_ROOT: RootDevice = {
  device: "/dev/pmem0",
  options: "ro,dax=always",
  modules: BOOT_MODULES,
};

/**
 * virtio-blk, read through the guest's page cache: for guests with neither
 * virtio-pmem nor DAX (arm64: QEMU 7.2's qemu-system-aarch64 has no
 * virtio-pmem-pci, and Debian's arm64 kernel has no ZONE_DEVICE, so no
 * FS_DAX). Cached pages are reclaimable, unlike the initramfs's tmpfs.
 */
export const BLK_ROOT: RootDevice = {
  device: "/dev/vda",
  options: "ro",
  modules: ["virtio_pci", "virtio_blk", "crc32c_generic", "erofs"],
};

/** "DEVICE OPTIONS" for boot-init.sh. */
export const BOOT_ROOT_FILE = "/etc/boot.root";
/** Where boot-init.sh mounts the image before switching root into it. */
export const NEWROOT = "/newroot";

export interface BootInputs {
  kernelRelease: string;
  /** Host path of the boot init script (rootfs/boot-init.sh). */
  init: string;
  /** Host path of the static busybox. */
  busybox: string;
  /** `busybox --list-full`: applet paths without a leading slash. */
  applets: readonly string[];
  /** Module paths relative to /lib/modules/RELEASE, dependencies first. */
  modules: readonly string[];
  /** Host directory holding the modules (/lib/modules/RELEASE). */
  modulesDir: string;
  /** Debian package of a host path, when dpkg knows it. */
  packageOf: (hostPath: string) => string | undefined;
  /** Where the root image is (default PMEM_ROOT); its modules are `modules`. */
  root?: RootDevice;
}

/**
 * The boot initramfs's entries, sorted by path with every parent present.
 * Throws like buildManifest on a duplicate path or a dangling link.
 */
export function buildBootManifest(inputs: BootInputs): Entry[] {
  const entries = new Map<string, Entry>();
  const add = (entry: Entry) => {
    if (entries.has(entry.path)) throw new Error(`boot image: two entries for ${entry.path}`);
    entries.set(entry.path, entry);
  };
  for (const path of ["/proc", "/sys", "/dev", NEWROOT]) {
    add({ kind: "dir", path, mode: path === "/proc" || path === "/sys" ? 0o555 : 0o755 });
  }
  // The kernel opens /dev/console for init before devtmpfs is mounted; the
  // init keeps it as its stdio, so unmounting devtmpfs later is safe.
  add({ kind: "chardev", path: "/dev/console", mode: 0o600, major: 5, minor: 1 });
  add({ kind: "chardev", path: "/dev/null", mode: 0o666, major: 1, minor: 3 });
  add({
    kind: "file",
    path: "/init",
    mode: 0o755,
    source: inputs.init,
    origin: "rootfs/boot-init.sh",
  });
  add({
    kind: "file",
    path: "/bin/busybox",
    mode: 0o755,
    source: inputs.busybox,
    origin: inputs.packageOf(inputs.busybox) ?? "busybox",
  });
  for (const applet of inputs.applets) {
    const path = `/${applet.replace(/^\/+/, "")}`;
    if (path === "/bin/busybox") continue;
    add({ kind: "symlink", path, target: "/bin/busybox", origin: "busybox applet" });
  }
  const modulesRoot = `/lib/modules/${inputs.kernelRelease}`;
  for (const module of inputs.modules) {
    const source = `${inputs.modulesDir}/${module}`;
    add({
      kind: "file",
      path: `${modulesRoot}/${module}`,
      mode: 0o644,
      source,
      origin: inputs.packageOf(source) ?? "kernel",
    });
  }
  add({
    kind: "text",
    path: BOOT_MODULES_LIST,
    mode: 0o644,
    content: inputs.modules.map((m) => `${m}\n`).join(""),
    origin: "rootfs/boot-manifest.ts",
  });
  const root = inputs.root ?? PMEM_ROOT;
  add({
    kind: "text",
    path: BOOT_ROOT_FILE,
    mode: 0o644,
    content: `${root.device} ${root.options}\n`,
    origin: "rootfs/boot-manifest.ts",
  });
  return checkManifest(withParents([...entries.values()]));
}
