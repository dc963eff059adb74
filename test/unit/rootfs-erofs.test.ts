/**
 * The erofs writer against erofs-utils' own reader: the image is unpacked
 * with fsck.erofs --extract and inspected with dump.erofs, not with our code.
 */
import { spawnSync } from "node:child_process";
import { lstatSync, readFileSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { IMAGE_ALIGN, paddedSize, writeErofs } from "../../rootfs/erofs";
import { type Entry, withParents } from "../../rootfs/manifest";
import { tempDir } from "../helpers/tmp";

const dir = tempDir("netagent-erofs-test-");
afterAll(() => dir.remove());

const big = dir.join("big.bin");
// Not a multiple of 4 KiB: with inline data its tail would sit next to the inode.
writeFileSync(big, Buffer.alloc(3 * 4096 + 123, 0x5a));

const entries: Entry[] = withParents([
  { kind: "file", path: "/usr/bin/big", mode: 0o755, source: big, origin: "t" },
  { kind: "text", path: "/etc/hostname", mode: 0o644, content: "guest\n", origin: "t" },
  { kind: "symlink", path: "/bin/sh", target: "/usr/bin/big", origin: "t" },
  { kind: "dir", path: "/root", mode: 0o700 },
  { kind: "dir", path: "/proc", mode: 0o555 },
  { kind: "dir", path: "/tmp", mode: 0o1777 },
  { kind: "chardev", path: "/dev/console", mode: 0o600, major: 5, minor: 1 },
]);

const image = dir.join("root.erofs");
const result = writeErofs(entries, image);
const out = dir.join("x");

const tool = (cmd: string, args: string[]) => {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};

describe("writeErofs", () => {
  it("writes an image fsck.erofs accepts, holding the files, links and modes", () => {
    tool("fsck.erofs", [`--extract=${out}`, "--preserve", image]);
    expect(readFileSync(`${out}/usr/bin/big`).equals(readFileSync(big))).toBe(true);
    expect(statSync(`${out}/usr/bin/big`).mode & 0o7777).toBe(0o755);
    expect(readFileSync(`${out}/etc/hostname`, "utf8")).toBe("guest\n");
    expect(readlinkSync(`${out}/bin/sh`)).toBe("/usr/bin/big");
    expect(lstatSync(`${out}/root`).mode & 0o7777).toBe(0o700);
    expect(lstatSync(`${out}/proc`).mode & 0o7777).toBe(0o555);
    expect(lstatSync(`${out}/tmp`).mode & 0o7777).toBe(0o1777);
  });

  it("leaves device nodes out (no root needed) and says so", () => {
    expect(result.skipped).toEqual(["/dev/console"]);
    expect(lstatSync(`${out}/dev`).isDirectory()).toBe(true);
  });

  it("stores files in plain blocks, owned by root with mtime 0: what DAX maps", () => {
    const info = tool("dump.erofs", ["--path=/usr/bin/big", image]);
    expect(info).toMatch(/Layout: 0\b/); // EROFS_INODE_FLAT_PLAIN; 2 = inline tail
    expect(info).toMatch(/Uid: 0\s+Gid: 0/);
    expect(info).toContain("1970-01-01 00:00:00");
    const text = tool("dump.erofs", ["--path=/etc/hostname", image]);
    expect(text).toMatch(/Layout: 0\b/);
  });

  it("pads the file to a multiple of 2 MiB, keeping the mkfs size", () => {
    expect(statSync(image).size).toBe(result.padded);
    expect(result.padded % IMAGE_ALIGN).toBe(0);
    expect(result.padded).toBeGreaterThanOrEqual(result.bytes);
    expect(result.bytes).toBeGreaterThan(3 * 4096);
  });

  it("gives the same bytes for the same entries (before the UUID)", () => {
    const again = dir.join("again.erofs");
    writeErofs(entries, again);
    // The superblock's UUID is random; everything after the superblock is the tree.
    const a = readFileSync(image).subarray(4096);
    const b = readFileSync(again).subarray(4096);
    expect(a.equals(b)).toBe(true);
  });
});

describe("paddedSize", () => {
  it.each([
    [0, IMAGE_ALIGN],
    [1, IMAGE_ALIGN],
    [IMAGE_ALIGN, IMAGE_ALIGN],
    [IMAGE_ALIGN + 1, 2 * IMAGE_ALIGN],
  ])("%i -> %i", (bytes, padded) => expect(paddedSize(bytes)).toBe(padded));
});
