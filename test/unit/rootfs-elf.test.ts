/**
 * rootfs/elf.ts against binutils' readelf, the independent reader: the
 * host's own executables, libraries and kernel modules, and ELF files made
 * here for the classes, byte orders and machines this host has none of.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EM, isElf, machineName, readElf } from "../../rootfs/elf";

/** What readelf says of a file: the machine line, the loader and the NEEDED names. */
function readelf(path: string) {
  const r = spawnSync("readelf", ["-W", "-h", "-l", "-d", path], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`readelf ${path}: ${r.stderr}`);
  return {
    machine: /^\s*Machine:\s+(.*)$/m.exec(r.stdout)?.[1]?.trim(),
    interp: /\[Requesting program interpreter: (.*)\]/.exec(r.stdout)?.[1],
    needed: [...r.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[(.*)\]/g)].map((m) => m[1]),
  };
}

const READELF_MACHINE: Record<number, string> = {
  [EM.X86_64]: "Advanced Micro Devices X86-64",
  [EM.AARCH64]: "AArch64",
  [EM.ARM]: "ARM",
  [EM.I386]: "Intel 80386",
};

function compare(path: string) {
  const mine = readElf(readFileSync(path), path);
  const theirs = readelf(path);
  expect(mine, path).toBeDefined();
  expect(READELF_MACHINE[mine?.machine ?? -1], path).toBe(theirs.machine);
  expect(mine?.interp, path).toBe(theirs.interp);
  expect(mine?.needed, path).toEqual(theirs.needed);
}

/**
 * A minimal dynamically linked ELF: one PT_LOAD mapping the whole file at
 * `base`, PT_INTERP, PT_DYNAMIC with DT_NEEDED entries, DT_STRTAB, DT_STRSZ.
 */
function makeElf(o: {
  bits: 32 | 64;
  le: boolean;
  machine: number;
  interp: string;
  needed: string[];
}) {
  const b64 = o.bits === 64;
  const ehsize = b64 ? 64 : 52;
  const phentsize = b64 ? 56 : 32;
  const dynEnt = b64 ? 16 : 8;
  const base = 0x400000;
  const strs = `${["", o.interp, ...o.needed].join("\0")}\0`;
  const phoff = ehsize;
  const interpOff = phoff + 3 * phentsize;
  const strOff = interpOff; // the interp string is the string table's first entry after ""
  const strBytes = new TextEncoder().encode(strs);
  const dynOff = Math.ceil((strOff + strBytes.length) / 8) * 8;
  const dyn: [number, number][] = [];
  let at = 1 + o.interp.length + 1;
  for (const n of o.needed) {
    dyn.push([1, at]);
    at += n.length + 1;
  }
  // DT_STRTAB, DT_STRSZ (readelf names nothing without it), DT_NULL.
  dyn.push([5, base + strOff], [10, strBytes.length], [0, 0]);
  const size = dynOff + dyn.length * dynEnt;
  const buf = new Uint8Array(size);
  const v = new DataView(buf.buffer);
  const w = (off: number, n: number) =>
    b64 ? v.setBigUint64(off, BigInt(n), o.le) : v.setUint32(off, n, o.le);
  buf.set([0x7f, 0x45, 0x4c, 0x46, b64 ? 2 : 1, o.le ? 1 : 2, 1]);
  v.setUint16(16, 3, o.le);
  v.setUint16(18, o.machine, o.le);
  v.setUint32(20, 1, o.le);
  w(b64 ? 32 : 28, phoff);
  v.setUint16(b64 ? 52 : 40, ehsize, o.le);
  v.setUint16(b64 ? 54 : 42, phentsize, o.le);
  v.setUint16(b64 ? 56 : 44, 3, o.le);
  const ph = (i: number, type: number, off: number, filesz: number) => {
    const p = phoff + i * phentsize;
    v.setUint32(p, type, o.le);
    if (b64) {
      w(p + 8, off);
      w(p + 16, base + off);
      w(p + 24, base + off);
      w(p + 32, filesz);
      w(p + 40, filesz);
    } else {
      w(p + 4, off);
      w(p + 8, base + off);
      w(p + 12, base + off);
      w(p + 16, filesz);
      w(p + 20, filesz);
    }
  };
  ph(0, 1, 0, size);
  ph(1, 3, interpOff + 1, o.interp.length + 1);
  ph(2, 2, dynOff, dyn.length * dynEnt);
  buf.set(strBytes, strOff);
  dyn.forEach(([tag, val], i) => {
    const e = dynOff + i * dynEnt;
    if (b64) {
      v.setBigInt64(e, BigInt(tag), o.le);
      w(e + 8, val);
    } else {
      v.setInt32(e, tag, o.le);
      w(e + 4, val);
    }
  });
  return buf;
}

const dir = mkdtempSync(join(tmpdir(), "netagent-elf-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("readElf", () => {
  it("agrees with readelf on the host's executables, libraries and a kernel module", () => {
    const release = readdirSync("/lib/modules")[0] as string;
    const files = [
      "/usr/bin/ip",
      "/usr/sbin/xtables-nft-multi",
      "/bin/busybox",
      "/usr/lib/x86_64-linux-gnu/xtables/libxt_tcp.so",
      "/lib/x86_64-linux-gnu/libc.so.6",
      "/lib64/ld-linux-x86-64.so.2",
      `/lib/modules/${release}/kernel/drivers/virtio/virtio_pci.ko`,
    ];
    for (const f of files) compare(f);
    expect(readElf(readFileSync("/usr/bin/ip"))?.needed).toContain("libc.so.6");
    expect(readElf(readFileSync("/bin/busybox"))?.interp).toBeUndefined();
  });

  it.each([
    { bits: 64, le: true, machine: EM.AARCH64 },
    { bits: 64, le: false, machine: EM.AARCH64 },
    { bits: 32, le: true, machine: EM.ARM },
    { bits: 32, le: false, machine: EM.I386 },
  ] as const)("agrees with readelf on a made %o ELF", (shape) => {
    const path = join(dir, `elf-${shape.bits}-${shape.le}-${shape.machine}`);
    const needed = ["libc.so.6", "libmnl.so.0", "libxtables.so.12"];
    writeFileSync(path, makeElf({ ...shape, interp: "/lib/ld-linux-aarch64.so.1", needed }));
    compare(path);
    const info = readElf(readFileSync(path));
    expect(info).toMatchObject({ bits: shape.bits, littleEndian: shape.le, needed });
    expect(machineName(info?.machine ?? 0)).toBe(
      { [EM.AARCH64]: "aarch64", [EM.ARM]: "arm", [EM.I386]: "i386" }[shape.machine],
    );
  });

  it("is undefined for a file that is not ELF", () => {
    expect(readElf(new TextEncoder().encode("#!/bin/sh\n"))).toBeUndefined();
    expect(isElf(new Uint8Array([0x7f, 0x45, 0x4c]))).toBe(false);
  });

  it("throws naming the file on a truncated one", () => {
    const whole = makeElf({ bits: 64, le: true, machine: EM.AARCH64, interp: "/l", needed: ["a"] });
    expect(() => readElf(whole.subarray(0, 40), "cut")).toThrow(/ELF cut: ELF header/);
    expect(() => readElf(whole.subarray(0, 100), "cut")).toThrow(/ELF cut: program header/);
    expect(() => readElf(whole.subarray(0, whole.length - 8), "cut")).toThrow(/ELF cut: /);
  });

  it("names unknown machines by number", () => {
    expect(machineName(9999)).toBe("machine 9999");
    expect(machineName(EM.X86_64)).toBe("x86_64");
  });
});
