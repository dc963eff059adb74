/**
 * The pieces of a foreign-architecture image build that need no network:
 * library resolution over made-up packages, link resolution inside an
 * unpacked package (never on the host), the ELF machine check, Depends
 * parsing, the arm64 kernel Image's magic, and the --arch words.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseDepends } from "../../rootfs/debian-cache";
import { resolveInRoot } from "../../rootfs/debian-sources";
import { type ElfInfo, EM } from "../../rootfs/elf";
import { checkMachines } from "../../rootfs/elf-check";
import { type PackageFile, resolveNeeded } from "../../rootfs/elf-deps";
import { isArm64Image, isGzip } from "../../rootfs/kernel";
import type { Entry } from "../../rootfs/manifest";
import { GUEST_ARCHES, parseGuestArch } from "../../src/host/vm/guest-arch";

const dir = mkdtempSync(join(tmpdir(), "netagent-foreign-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("resolveNeeded", () => {
  // Made-up packages: file path -> [package, interp, needed], and each package's declared deps.
  const files: Record<string, [string, string | undefined, string[]]> = {
    "/sbin/ip": ["iproute2", "/lib/ld.so", ["libbpf.so.1", "libc.so.6"]],
    "/usr/lib/m/libbpf.so.1": ["libbpf1", undefined, ["libz.so.1", "libc.so.6"]],
    "/lib/m/libz.so.1": ["zlib1g", undefined, ["libc.so.6"]],
    "/lib/m/libc.so.6": ["libc6", "/lib/ld.so", []],
    "/lib/ld.so": ["libc6", undefined, []],
  };
  const declared: Record<string, string[]> = {
    iproute2: ["libbpf1", "libc6"],
    libbpf1: ["zlib1g", "libc6"],
  };

  function world(unpacked: string[]) {
    const have = new Set(unpacked);
    const expansions: string[] = [];
    return {
      expansions,
      inputs: {
        libDirs: ["/lib/m", "/usr/lib/m"],
        lookup: (path: string): PackageFile | undefined => {
          const f = files[path];
          return f && have.has(f[0]) ? { path, source: `/cache${path}`, pkg: f[0] } : undefined;
        },
        expand: (pkg: string) => {
          expansions.push(pkg);
          const fresh = (declared[pkg] ?? []).filter((d) => !have.has(d));
          for (const d of fresh) have.add(d);
          return fresh.length > 0;
        },
        read: (f: PackageFile): ElfInfo => {
          const [, interp, needed] = files[f.path] ?? ["", undefined, []];
          return { bits: 64, littleEndian: true, type: 3, machine: EM.AARCH64, interp, needed };
        },
      },
    };
  }
  const ip = { path: "/sbin/ip", source: "/cache/sbin/ip", pkg: "iproute2" };

  it("follows NEEDED through the libraries, fetching a package's deps only when a name is missing", () => {
    const w = world(["iproute2", "libc6"]);
    const libs = resolveNeeded({ ...w.inputs, roots: [ip] });
    expect(libs.map((l) => `${l.path} ${l.pkg}`)).toEqual([
      "/lib/ld.so libc6",
      "/usr/lib/m/libbpf.so.1 libbpf1",
      "/lib/m/libc.so.6 libc6",
      "/lib/m/libz.so.1 zlib1g",
    ]);
    // iproute2's deps for libbpf, then libbpf1's for libz; never libc6's.
    expect(w.expansions).toEqual(["iproute2", "libbpf1"]);
  });

  it("names the file, its package and the soname when no package has it", () => {
    const w = world(["iproute2", "libc6"]);
    declared.libbpf1 = ["libc6"];
    try {
      expect(() => resolveNeeded({ ...w.inputs, roots: [ip] })).toThrow(
        "/usr/lib/m/libbpf.so.1 (libbpf1) needs libz.so.1, which none of the unpacked packages has in /lib/m /usr/lib/m",
      );
    } finally {
      declared.libbpf1 = ["zlib1g", "libc6"];
    }
  });
});

describe("resolveInRoot", () => {
  const root = join(dir, "pkg");
  mkdirSync(join(root, "lib/m"), { recursive: true });
  mkdirSync(join(root, "usr/lib"), { recursive: true });
  writeFileSync(join(root, "lib/m/libc.so.6.real"), "guest libc");
  symlinkSync("libc.so.6.real", join(root, "lib/m/libc.so.6"));
  // Absolute links mean the image's paths: /lib/m inside the package, not the host's /lib.
  symlinkSync("/lib/m/libc.so.6", join(root, "lib/abs"));
  symlinkSync("../../lib/m", join(root, "usr/lib/m"));
  symlinkSync("/etc/hostname", join(root, "lib/host"));
  symlinkSync("loop2", join(root, "lib/loop1"));
  symlinkSync("loop1", join(root, "lib/loop2"));

  it("follows relative and absolute links inside the package, through linked directories", () => {
    const real = join(root, "lib/m/libc.so.6.real");
    expect(resolveInRoot(root, "/lib/m/libc.so.6")).toBe(real);
    expect(resolveInRoot(root, "/lib/abs")).toBe(real);
    expect(resolveInRoot(root, "/usr/lib/m/libc.so.6")).toBe(real);
  });

  it("never reaches the host's files, and is undefined for what is not there or not a file", () => {
    expect(resolveInRoot(root, "/lib/host")).toBeUndefined();
    expect(resolveInRoot(root, "/lib/m/nothing")).toBeUndefined();
    expect(resolveInRoot(root, "/lib/m")).toBeUndefined();
    expect(() => resolveInRoot(root, "/lib/loop1")).toThrow(/too many links/);
  });
});

describe("checkMachines", () => {
  const head = (machine: number) => {
    const b = new Uint8Array(64);
    b.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]);
    new DataView(b.buffer).setUint16(18, machine, true);
    return b;
  };
  const heads: Record<string, Uint8Array> = {
    "/h/agent": head(EM.AARCH64),
    "/h/ip": head(EM.AARCH64),
    "/h/init.sh": new TextEncoder().encode("#!/bin/sh\n"),
    "/h/libc-x86": head(EM.X86_64),
  };
  const file = (path: string, source: string): Entry => ({
    kind: "file",
    path,
    mode: 0o755,
    source,
    origin: "t",
  });
  const ok = [
    file("/usr/bin/netagent", "/h/agent"),
    file("/sbin/ip", "/h/ip"),
    file("/init", "/h/init.sh"),
  ];
  const read = (s: string) => heads[s] as Uint8Array;

  it("labels every ELF file with its machine and leaves scripts out", () => {
    const r = checkMachines(ok, EM.AARCH64, "arm64 image", read);
    expect([...r.machines.entries()].map(([e, m]) => `${e.path} ${m}`)).toEqual([
      "/usr/bin/netagent aarch64",
      "/sbin/ip aarch64",
    ]);
    expect(r.summary).toBe("2 ELF files, every one aarch64 (e_machine 183)");
  });

  it("fails naming each file of another machine", () => {
    const bad = [...ok, file("/lib/libc.so.6", "/h/libc-x86")];
    expect(() => checkMachines(bad, EM.AARCH64, "arm64 image", read)).toThrow(
      "arm64 image: 1 ELF file(s) not aarch64:\n  /lib/libc.so.6 is x86_64 (/h/libc-x86)",
    );
  });
});

describe("parseDepends", () => {
  it("takes the first alternative of each, without versions or :any", () => {
    expect(
      parseDepends(
        "libc6 (>= 2.34), libbpf1 (>= 1:0.6.0), debconf (>= 0.5) | debconf-2.0, perl:any, libcap2-bin",
      ),
    ).toEqual(["libc6", "libbpf1", "debconf", "perl", "libcap2-bin"]);
    expect(parseDepends("")).toEqual([]);
  });
});

describe("the arm64 kernel Image", () => {
  it("is known by its magic at 0x38; a gzip member by its own", () => {
    const image = new Uint8Array(64);
    image.set([0x41, 0x52, 0x4d, 0x64], 0x38);
    expect(isArm64Image(image)).toBe(true);
    expect(isArm64Image(new Uint8Array(64))).toBe(false);
    expect(isGzip(Bun.gzipSync(image))).toBe(true);
    expect(isGzip(image)).toBe(false);
  });
});

describe("parseGuestArch", () => {
  it("knows x86_64 and arm64, and refuses anything else naming the flag", () => {
    expect(parseGuestArch("arm64")).toBe(GUEST_ARCHES.arm64);
    expect(parseGuestArch("x86_64").guestDir).toBe("dist/guest");
    expect(GUEST_ARCHES.arm64.guestDir).toBe("dist/guest-arm64");
    expect(() => parseGuestArch("aarch65")).toThrow(
      '--arch: expected x86_64 or arm64, got "aarch65"',
    );
    expect(() => parseGuestArch("toString")).toThrow(/expected x86_64 or arm64/);
  });
});
