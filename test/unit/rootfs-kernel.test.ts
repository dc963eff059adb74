import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { findKernelPayload, isElf64, supportsPvh } from "../../rootfs/kernel";

const XZ = [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00];
const GZ = [0x1f, 0x8b, 0x08];

describe("findKernelPayload", () => {
  it("finds the payload after the setup code", () => {
    const image = new Uint8Array([...new Array(100).fill(0xfd), ...XZ, 1, 2, 3]);
    expect(findKernelPayload(image)).toEqual({ format: "xz", offset: 100 });
  });

  it("prefers the format the kernel config names when two magics occur", () => {
    const image = new Uint8Array([0, ...GZ, 0, 0, ...XZ, 0]);
    expect(findKernelPayload(image)?.format).toBe("xz");
    expect(findKernelPayload(image, "CONFIG_KERNEL_GZIP=y\n")).toEqual({
      format: "gzip",
      offset: 1,
    });
  });

  it("says undefined when there is nothing it knows", () => {
    expect(findKernelPayload(new Uint8Array(64))).toBeUndefined();
  });

  it("finds the payload of this machine's kernel when there is one", () => {
    const release = "6.1.0-57-amd64";
    if (!existsSync(`/boot/vmlinuz-${release}`)) return;
    const config = readFileSync(`/boot/config-${release}`, "utf8");
    const found = findKernelPayload(readFileSync(`/boot/vmlinuz-${release}`), config);
    expect(found?.format).toBe(/^CONFIG_KERNEL_XZ=y$/m.test(config) ? "xz" : found?.format);
    expect(found?.offset).toBeGreaterThan(0);
  });
});

describe("supportsPvh / isElf64", () => {
  it("reads CONFIG_PVH", () => {
    expect(supportsPvh("CONFIG_X=y\nCONFIG_PVH=y\n")).toBe(true);
    expect(supportsPvh("# CONFIG_PVH is not set\n")).toBe(false);
  });
  it("recognises a 64-bit ELF", () => {
    expect(isElf64(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1]))).toBe(true);
    expect(isElf64(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 1, 1]))).toBe(false);
  });
});
