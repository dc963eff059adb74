/**
 * Image mode's files, written by `npm run rootfs` next to the initramfs
 * mode's: the read-only root image (root.erofs: what initrd.img holds), the
 * small boot initramfs that mounts it (boot-initrd.img) and its manifest.
 * The executor around the pure buildBootManifest and the erofs writer.
 */
import { statSync, writeFileSync } from "node:fs";
import { type BootInputs, buildBootManifest } from "./boot-manifest";
import { writeErofs } from "./erofs";
import { type Entry, renderManifest } from "./manifest";

export const ROOT_IMAGE = "root.erofs";
export const BOOT_INITRD = "boot-initrd.img";
export const BOOT_MANIFEST = "boot-manifest.txt";

export interface ImageModeFiles {
  /** Bytes of the erofs image before padding, and the padded device size. */
  imageBytes: number;
  imagePadded: number;
  bootInitrdBytes: number;
  bootEntries: number;
  /** Root entries not in the image (device nodes). */
  skipped: string[];
}

/**
 * Writes OUT/root.erofs from `rootEntries` and OUT/boot-initrd.img from
 * `boot`, packed by `pack` (entries -> compressed cpio); `sizeOf` gives
 * an entry's size for the boot manifest.
 */
export async function writeImageMode(opts: {
  out: string;
  rootEntries: readonly Entry[];
  boot: BootInputs;
  pack: (entries: readonly Entry[]) => Uint8Array;
  sizeOf: (entry: Entry) => number;
  /** Checks the boot initramfs's ELF files' machine (throws); their machines, for the manifest. */
  machines?: (entries: readonly Entry[]) => Map<Entry, string>;
}): Promise<ImageModeFiles> {
  const { out } = opts;
  const bootEntries = buildBootManifest(opts.boot);
  const machines = opts.machines?.(bootEntries) ?? new Map<Entry, string>();
  const image = writeErofs(opts.rootEntries, `${out}/${ROOT_IMAGE}`);
  const packed = opts.pack(bootEntries);
  await Bun.write(`${out}/${BOOT_INITRD}`, packed);
  const bootInitrdBytes = statSync(`${out}/${BOOT_INITRD}`).size;
  const totals: [string, string][] = [
    ["modules", opts.boot.modules.map((m) => m.replace(/^.*\//, "")).join(" ")],
    ["entries", String(bootEntries.length)],
    ["compressed", `${bootInitrdBytes} bytes (${BOOT_INITRD})`],
    ["root image", `${ROOT_IMAGE}: ${image.bytes} bytes, padded to ${image.padded}`],
    ["not in image", image.skipped.join(" ") || "(none)"],
  ];
  writeFileSync(
    `${out}/${BOOT_MANIFEST}`,
    renderManifest(bootEntries, opts.sizeOf, totals, (e) => machines.get(e)),
  );
  return {
    imageBytes: image.bytes,
    imagePadded: image.padded,
    bootInitrdBytes,
    bootEntries: bootEntries.length,
    skipped: image.skipped,
  };
}
