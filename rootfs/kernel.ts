/**
 * The uncompressed kernel inside a bzImage, for PVH boot: QEMU starts an
 * ELF vmlinux with a PVH entry note directly in 32-bit mode, skipping the
 * real-mode setup and the bzImage's self-decompression (about 3 s of the
 * boot under TCG with Debian's xz-compressed kernel). Pure: finds where the
 * compressed payload starts and which decompressor it needs.
 */

const MAGICS: { format: "xz" | "zstd" | "gzip"; bytes: number[] }[] = [
  { format: "xz", bytes: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] },
  { format: "zstd", bytes: [0x28, 0xb5, 0x2f, 0xfd] },
  { format: "gzip", bytes: [0x1f, 0x8b, 0x08] },
];

export interface KernelPayload {
  format: "xz" | "zstd" | "gzip";
  offset: number;
}

/**
 * The compressed vmlinux in a bzImage: the first offset holding a known
 * magic, trying the formats in the order the kernel config names them.
 * Undefined when there is none.
 */
export function findKernelPayload(image: Uint8Array, config = ""): KernelPayload | undefined {
  const preferred = /^CONFIG_KERNEL_(XZ|ZSTD|GZIP)=y$/m.exec(config)?.[1]?.toLowerCase();
  const order = [...MAGICS].sort(
    (a, b) => Number(b.format === preferred) - Number(a.format === preferred),
  );
  for (const { format, bytes } of order) {
    const at = indexOf(image, bytes);
    if (at >= 0) return { format, offset: at };
  }
  return undefined;
}

/** True when the kernel config has PVH entry support (CONFIG_PVH=y). */
export function supportsPvh(config: string): boolean {
  return /^CONFIG_PVH=y$/m.test(config);
}

/** True when `elf` is a 64-bit little-endian ELF executable. */
export function isElf64(elf: Uint8Array): boolean {
  return elf[0] === 0x7f && elf[1] === 0x45 && elf[2] === 0x4c && elf[3] === 0x46 && elf[4] === 2;
}

function indexOf(haystack: Uint8Array, needle: number[]): number {
  const first = needle[0] as number;
  for (let i = haystack.indexOf(first); i >= 0; i = haystack.indexOf(first, i + 1)) {
    if (needle.every((b, j) => haystack[i + j] === b)) return i;
  }
  return -1;
}

/**
 * True when `image` is an uncompressed arm64 kernel Image (the "ARM\x64"
 * magic at 0x38, linux Documentation/arch/arm64/booting.rst), which QEMU's
 * -kernel boots as it is.
 */
export function isArm64Image(image: Uint8Array): boolean {
  return (
    image[0x38] === 0x41 && image[0x39] === 0x52 && image[0x3a] === 0x4d && image[0x3b] === 0x64
  );
}

/** True when `data` starts with a gzip member (Debian's arm64 vmlinuz on some releases). */
export function isGzip(data: Uint8Array): boolean {
  return data[0] === 0x1f && data[1] === 0x8b && data[2] === 0x08;
}
