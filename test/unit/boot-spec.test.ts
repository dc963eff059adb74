/**
 * The boot.json contract end to end without QEMU: what rootfs writes, the
 * runner reads back into absolute paths and QEMU arguments.
 */
import { describe, expect, it } from "vitest";
import {
  imageBootJson,
  initramfsBootJson,
  MAX_MEMORY,
  renderBootJson,
} from "../../rootfs/boot-json";
import { bootJsonPath, IMAGE_PLACEHOLDER, parseBootSpec } from "../../src/host/vm/boot-spec";
import { type GuestConfig, kernelCmdline, qemuArgs } from "../../src/host/vm/qemu-args";

const image = imageBootJson({
  kernel: "vmlinux",
  initrd: "boot-initrd.img",
  image: "root.erofs",
  imageBytes: 119537664,
});

describe("boot.json as rootfs writes it", () => {
  it("has exactly the contract's keys, paths relative", () => {
    const json = JSON.parse(renderBootJson(image));
    expect(Object.keys(json).sort()).toEqual(["cmdline", "image", "initrd", "kernel", "qemu"]);
    expect(json).toMatchObject({
      kernel: "vmlinux",
      initrd: "boot-initrd.img",
      image: "root.erofs",
    });
  });

  it("image mode: swiotlb=noforce, slots/maxmem, a shared read-only file backend, virtio-pmem", () => {
    expect(image.cmdline).toEqual(["swiotlb=noforce"]);
    expect(image.qemu).toEqual([
      "-m",
      `slots=1,maxmem=${MAX_MEMORY}`,
      "-object",
      `memory-backend-file,id=netagent-root,share=on,readonly=on,mem-path=${IMAGE_PLACEHOLDER},size=119537664`,
      "-device",
      "virtio-pmem-pci,memdev=netagent-root,id=netagent-root-pmem",
    ]);
    // Nothing about consoles or the agent channel.
    expect(image.qemu.join(" ")).not.toMatch(/serial|chardev|console|vsock|-append|-kernel/);
  });

  it("initramfs mode attaches nothing", () => {
    expect(initramfsBootJson({ kernel: "vmlinuz", initrd: "initrd.img" })).toEqual({
      kernel: "vmlinuz",
      initrd: "initrd.img",
      image: null,
      cmdline: [],
      qemu: [],
    });
  });

  it("refuses an image size that is not a positive integer", () => {
    for (const imageBytes of [0, -1, 1.5, Number.NaN]) {
      expect(() => imageBootJson({ kernel: "k", initrd: "i", image: "r", imageBytes })).toThrow(
        "boot.json: image size",
      );
    }
  });
});

describe("parseBootSpec", () => {
  it("resolves paths against the file's directory and fills the image's path in", () => {
    const spec = parseBootSpec(renderBootJson(image), "/srv/guest");
    expect(spec).toMatchObject({
      kernel: "/srv/guest/vmlinux",
      initrd: "/srv/guest/boot-initrd.img",
      image: "/srv/guest/root.erofs",
      cmdline: ["swiotlb=noforce"],
    });
    expect(spec.qemu[3]).toBe(
      "memory-backend-file,id=netagent-root,share=on,readonly=on,mem-path=/srv/guest/root.erofs,size=119537664",
    );
  });

  it("doubles commas in the image path (QEMU's escape) and keeps absolute paths", () => {
    const spec = parseBootSpec(renderBootJson({ ...image, image: "/a,b/root.erofs" }), "/x");
    expect(spec.image).toBe("/a,b/root.erofs");
    expect(spec.qemu[3]).toContain("mem-path=/a,,b/root.erofs,size=");
  });

  it("reads initramfs mode with no image", () => {
    const spec = parseBootSpec(
      renderBootJson(initramfsBootJson({ kernel: "vmlinuz", initrd: "initrd.img" })),
      "/g",
    );
    expect(spec.image).toBeUndefined();
    expect(spec.qemu).toEqual([]);
  });

  it.each([
    ["not json", "{", "not JSON"],
    [
      "a missing key",
      JSON.stringify({ kernel: "k", initrd: "i", image: null, cmdline: [] }),
      "qemu",
    ],
    [
      "an unknown key",
      JSON.stringify({ ...initramfsBootJson({ kernel: "k", initrd: "i" }), extra: 1 }),
      "extra",
    ],
    [
      "a cmdline word with a space",
      JSON.stringify({ kernel: "k", initrd: "i", image: null, cmdline: ["a b"], qemu: [] }),
      'cmdline word "a b" has spaces',
    ],
    [
      "{image} without an image",
      JSON.stringify({ kernel: "k", initrd: "i", image: null, cmdline: [], qemu: ["x={image}"] }),
      "names {image}, image is null",
    ],
    [
      "a number as a path",
      JSON.stringify({ kernel: 1, initrd: "i", image: null, cmdline: [], qemu: [] }),
      "kernel",
    ],
  ])("refuses %s, naming the file and the field", (_, text, words) => {
    expect(() => parseBootSpec(text, "/g", "/g/boot.json")).toThrow(words);
    expect(() => parseBootSpec(text, "/g", "/g/boot.json")).toThrow("/g/boot.json");
  });

  it("names each mode's file", () => {
    expect(bootJsonPath()).toBe("dist/guest/boot.json");
    expect(bootJsonPath("image")).toBe("dist/guest/boot-image.json");
    expect(bootJsonPath("initramfs", "/d")).toBe("/d/boot-initramfs.json");
  });
});

describe("the runner's QEMU and kernel command lines with a boot description", () => {
  const spec = parseBootSpec(renderBootJson(image), "/g");
  const config: GuestConfig = {
    kernel: spec.kernel,
    initrd: spec.initrd,
    memoryMiB: 512,
    cpus: 1,
    kvm: false,
    mac: "52:54:00:12:34:56",
    channel: { kind: "serial", socket: "/tmp/a.sock" },
    startAgent: true,
    debugConsole: false,
    kernelMessages: false,
    extraCmdline: spec.cmdline,
    extraQemu: spec.qemu,
  };

  it("appends the image's QEMU arguments after the runner's own, keeping its -m size", () => {
    const args = qemuArgs(config);
    expect(args.slice(-spec.qemu.length)).toEqual(spec.qemu);
    // Two -m: QEMU merges them (size from the runner, slots/maxmem from boot.json).
    const ms = args.flatMap((a, i) => (a === "-m" ? [args[i + 1]] : []));
    expect(ms).toEqual(["512", `slots=1,maxmem=${MAX_MEMORY}`]);
    expect(args[args.indexOf("-initrd") + 1]).toBe("/g/boot-initrd.img");
  });

  it("puts the image's words on the kernel command line", () => {
    expect(kernelCmdline(config).split(" ")).toContain("swiotlb=noforce");
  });
});
