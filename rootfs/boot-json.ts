/**
 * dist/guest/boot.json (**contract**): how to boot the guest image, for a
 * runtime or our own runner, without knowing how the image is built:
 *
 *   {"kernel": PATH, "initrd": PATH, "image": PATH | null,
 *    "cmdline": [WORD, ...], "qemu": [ARG, ...]}
 *
 * Paths are relative to the directory holding the file. `cmdline` holds
 * only the words the image needs (the runner adds console, agent.* and its
 * own); `qemu` only the arguments that attach the image (no console, no
 * agent channel). In `qemu`, IMAGE_PLACEHOLDER stands for the image's
 * absolute path with QEMU's commas doubled. Pure. The reader is
 * src/host/vm/boot-spec.ts.
 */
import { IMAGE_PLACEHOLDER } from "../src/host/vm/boot-spec";

export interface BootJson {
  kernel: string;
  initrd: string;
  /** The read-only root image (image mode); null in initramfs mode. */
  image: string | null;
  cmdline: string[];
  qemu: string[];
}

/**
 * Upper bound of guest RAM plus device memory. QEMU needs slots/maxmem to
 * give a virtio-pmem device guest-physical space; it merges this `-m` with
 * the runner's `-m SIZE`. It reserves address space, not host memory; a
 * runner giving the guest more than this (less the image) must raise it.
 */
export const MAX_MEMORY = "16G";

/**
 * Image mode: the boot initramfs mounts the erofs image on /dev/pmem0 with
 * dax=always. `imageBytes` is the padded image size (the device size).
 */
export function imageBootJson(files: {
  kernel: string;
  initrd: string;
  image: string;
  imageBytes: number;
}): BootJson {
  if (!Number.isInteger(files.imageBytes) || files.imageBytes <= 0) {
    throw new Error(`boot.json: image size ${files.imageBytes} is not a positive integer`);
  }
  return {
    kernel: files.kernel,
    initrd: files.initrd,
    image: files.image,
    // With slots/maxmem the kernel sees memory above 4 GiB and reserves a
    // 64 MiB swiotlb bounce buffer out of MemTotal; virtio devices here do
    // not need it.
    cmdline: ["swiotlb=noforce"],
    qemu: [
      "-m",
      `slots=1,maxmem=${MAX_MEMORY}`,
      "-object",
      // share=on: the pages are the host's page cache of the file, one copy
      // for every VM; readonly=on: no guest can write the image.
      `memory-backend-file,id=netagent-root,share=on,readonly=on,mem-path=${IMAGE_PLACEHOLDER},size=${files.imageBytes}`,
      "-device",
      "virtio-pmem-pci,memdev=netagent-root,id=netagent-root-pmem",
    ],
  };
}

/**
 * Image mode where there is no virtio-pmem or no DAX (arm64 under -M virt):
 * the same erofs image as a read-only virtio-blk disk, which the boot
 * initramfs mounts from /dev/vda without dax; no memory hotplug, so no
 * slots/maxmem and no swiotlb word.
 */
export function blkImageBootJson(files: {
  kernel: string;
  initrd: string;
  image: string;
}): BootJson {
  return {
    kernel: files.kernel,
    initrd: files.initrd,
    image: files.image,
    cmdline: [],
    qemu: [
      "-drive",
      `file=${IMAGE_PLACEHOLDER},if=none,id=netagent-root,format=raw,readonly=on`,
      "-device",
      "virtio-blk-pci,drive=netagent-root,id=netagent-root-blk",
    ],
  };
}

/** Initramfs mode: everything in the initramfs, nothing attached. */
export function initramfsBootJson(files: { kernel: string; initrd: string }): BootJson {
  return { kernel: files.kernel, initrd: files.initrd, image: null, cmdline: [], qemu: [] };
}

/** The file's text: one key per line, stable order. */
export function renderBootJson(boot: BootJson): string {
  return `${JSON.stringify(boot, null, 2)}\n`;
}
