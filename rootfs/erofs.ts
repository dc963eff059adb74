/**
 * Image mode: writes the manifest's entries as a read-only erofs image,
 * without root and without a loop mount: the entries are laid out in a
 * scratch directory (plain files, directories, symlinks) and packed with
 * mkfs.erofs (Debian erofs-utils) owned by root, with mtime 0. Device
 * nodes are left out (making them needs root): /dev is a devtmpfs mount
 * point in the guest. The image is uncompressed with 4 KiB blocks, the
 * layout erofs can map with DAX.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Entry } from "./manifest";

/**
 * The image file is padded to a multiple of this: QEMU maps it whole as
 * the virtio-pmem device, and the guest kernel maps device memory in
 * 2 MiB subsections. The padding is a hole, not disk or page cache.
 */
export const IMAGE_ALIGN = 2 * 1024 * 1024;

/** Rounds `bytes` up to a multiple of IMAGE_ALIGN (at least one). */
export function paddedSize(bytes: number): number {
  return Math.max(IMAGE_ALIGN, Math.ceil(bytes / IMAGE_ALIGN) * IMAGE_ALIGN);
}

/**
 * Lays `entries` (sorted, parents first) out under `dir`. Directory modes
 * are set last, so a read-only directory still gets its children. Returns
 * the paths left out (device nodes).
 */
export function stageTree(entries: readonly Entry[], dir: string): string[] {
  const skipped: string[] = [];
  const at = (path: string) => join(dir, path);
  for (const e of entries) {
    switch (e.kind) {
      case "dir":
        mkdirSync(at(e.path), { recursive: true });
        break;
      case "file":
        mkdirSync(dirname(at(e.path)), { recursive: true });
        copyFileSync(e.source, at(e.path));
        chmodSync(at(e.path), e.mode);
        break;
      case "text":
        mkdirSync(dirname(at(e.path)), { recursive: true });
        writeFileSync(at(e.path), e.content);
        chmodSync(at(e.path), e.mode);
        break;
      case "symlink":
        mkdirSync(dirname(at(e.path)), { recursive: true });
        symlinkSync(e.target, at(e.path));
        break;
      case "chardev":
        skipped.push(e.path);
        break;
    }
  }
  for (const e of [...entries].reverse()) if (e.kind === "dir") chmodSync(at(e.path), e.mode);
  return skipped;
}

export interface ErofsResult {
  /** Bytes mkfs.erofs wrote, before padding. */
  bytes: number;
  /** Size of the padded image file. */
  padded: number;
  /** Entries left out of the image (device nodes). */
  skipped: string[];
}

/**
 * Writes `entries` to the erofs image `image` (replaced if present),
 * padded to IMAGE_ALIGN. Throws with mkfs.erofs's words when it fails.
 */
export function writeErofs(entries: readonly Entry[], image: string): ErofsResult {
  const dir = mkdtempSync(join(tmpdir(), "netagent-erofs-"));
  try {
    const tree = join(dir, "root");
    mkdirSync(tree);
    const skipped = stageTree(entries, tree);
    rmSync(image, { force: true });
    // -T0: every mtime 0, --all-root: uid/gid 0, -x-1: no xattrs from the
    // scratch directory; same inputs, same tree. DAX maps only files in
    // plain blocks: no -z (compression) and noinline_data, or every file's
    // tail is packed next to its inode and erofs reads the whole file
    // through the guest's page cache instead (dump.erofs: "Layout: 2").
    const args = ["-T0", "--all-root", "-x-1", "-Enoinline_data", "--quiet", image, tree];
    const r = spawnSync("mkfs.erofs", args, { encoding: "utf8" });
    if (r.error) throw new Error(`mkfs.erofs: ${r.error.message} (Debian package erofs-utils)`);
    if (r.status !== 0) {
      throw new Error(`mkfs.erofs ${args.join(" ")}: exit ${r.status}: ${r.stderr.trim()}`);
    }
    const bytes = statSync(image).size;
    const padded = paddedSize(bytes);
    truncateSync(image, padded);
    return { bytes, padded, skipped };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
