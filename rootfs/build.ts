/**
 * `npm run rootfs`: builds the guest image from dist/netagent and Debian's
 * packages (installed when missing), in both boot modes. The thin executor
 * around the pure manifests: probes the host, plans with buildManifest and
 * buildBootManifest, and writes to dist/guest:
 *   - vmlinuz, and vmlinux (the same kernel uncompressed, for PVH boot)
 *     when the kernel supports it;
 *   - initramfs mode: initrd.img (newc cpio, compressed) holding everything;
 *   - image mode: root.erofs (the same tree, a read-only erofs image the
 *     guest maps with DAX from virtio-pmem) and boot-initrd.img (busybox and
 *     the modules to mount it);
 *   - boot-image.json and boot-initramfs.json (the boot.json contract for
 *     each mode) and boot.json, a copy of the default mode's (image; or
 *     initramfs with --default initramfs, for hypervisors without pmem);
 *   - manifest.txt and boot-manifest.txt.
 * With --arch arm64 the guest is arm64, from Debian's arm64 packages
 * (debian-sources.ts: downloaded and unpacked, never installed or run),
 * into dist/guest-arm64, its agent compiled first (dist/netagent-arm64);
 * its image mode is the erofs image on virtio-blk (boot-manifest.ts
 * BLK_ROOT: no virtio-pmem or DAX there) and its kernel the arm64 Image.
 * Every ELF file in both images is checked to be of the guest's machine.
 * Options: --arch x86_64|arm64, --out DIR, --agent PATH,
 * --kernel-release RELEASE (x86_64), --compress lz4|zstd|gzip (default
 * lz4), --default image|initramfs, --front STANDIN (our image in front
 * mode for the tests, into GUEST-front: front.ts), --extra FILE[,FILE...]
 * (executables to compare in the guest, each at /opt/NAME: benches only,
 * bench/profile/guest-commands.ts).
 */

import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { type GuestArch, parseGuestArch } from "../src/host/vm/guest-arch";
import {
  type BootJson,
  blkImageBootJson,
  imageBootJson,
  initramfsBootJson,
  renderBootJson,
} from "./boot-json";
import { BLK_ROOT, PMEM_ROOT } from "./boot-manifest";
import { report } from "./build-report";
import { type CpioRecord, encodeCpio, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG } from "./cpio";
import { debianSources } from "./debian-sources";
import { checkMachines } from "./elf-check";
import { FRONT_CMDLINE, frontEntries } from "./front";
import { hostSources } from "./host-sources";
import { BOOT_INITRD, ROOT_IMAGE, writeImageMode } from "./image-mode";
import { IPTABLES_MODULES } from "./iptables";
import { findKernelPayload, isArm64Image, isElf64, isGzip, supportsPvh } from "./kernel";
import { buildManifest, type Entry } from "./manifest";
import { parseModulesBuiltin, parseModulesDep, resolveModules } from "./modules";
import { run } from "./run";
import type { GuestSources } from "./sources";

/**
 * The modules init loads before it starts the agent: its transports
 * (virtio-serial, vsock) and the pod's links, the tun devices Apply makes
 * among them (tun.ko: no dependencies; devtmpfs then has /dev/net/tun).
 * Their dependencies come from modules.dep.
 */
export const EARLY_MODULES = [
  "virtio_pci",
  "virtio_net",
  "virtio_console",
  "vsock",
  "vmw_vsock_virtio_transport",
  "tun",
];
/** Every module the guest needs; the ones not early are loaded beside the agent. */
export const GUEST_MODULES = [...EARLY_MODULES, ...IPTABLES_MODULES];
const MODES = ["image", "initramfs"] as const;

/**
 * Compressors the Debian kernel unpacks (CONFIG_RD_*). lz4 is the default:
 * the initramfs is unpacked by the guest's CPU before init runs, and under
 * TCG lz4 decompresses the ~110 MiB several times faster than zstd or gzip,
 * for a somewhat larger file. The kernel needs lz4's legacy frame format (-l).
 */
const COMPRESSORS: Record<string, { cmd: string; args: string[] }> = {
  lz4: { cmd: "lz4", args: ["-l", "-9", "-q"] },
  zstd: { cmd: "zstd", args: ["-9", "-T0", "-q"] },
  gzip: { cmd: "gzip", args: ["-9", "-n"] },
};

function toRecord(entry: Entry): CpioRecord {
  const name = entry.path.slice(1);
  switch (entry.kind) {
    case "dir":
      return { name, mode: S_IFDIR | entry.mode };
    case "file":
      return { name, mode: S_IFREG | entry.mode, data: readFileSync(entry.source) };
    case "text":
      return { name, mode: S_IFREG | entry.mode, data: new TextEncoder().encode(entry.content) };
    case "symlink":
      return { name, mode: S_IFLNK | 0o777, data: new TextEncoder().encode(entry.target) };
    case "chardev":
      return { name, mode: S_IFCHR | entry.mode, rdev: { major: entry.major, minor: entry.minor } };
  }
}

function sizeOf(entry: Entry): number {
  switch (entry.kind) {
    case "file":
      return statSync(entry.source).size;
    case "text":
      return new TextEncoder().encode(entry.content).length;
    case "symlink":
      return entry.target.length;
    default:
      return 0;
  }
}

/**
 * Writes the kernel's uncompressed ELF for PVH boot when the kernel
 * supports it; returns false (and removes a stale one) otherwise.
 */
async function writeVmlinux(src: GuestSources, path: string): Promise<boolean> {
  rmSync(path, { force: true });
  if (!supportsPvh(src.kernelConfig)) return false;
  const image = readFileSync(src.kernel);
  const payload = findKernelPayload(image, src.kernelConfig);
  if (payload === undefined) return false;
  const tool = {
    xz: ["xz", "-dc", "--single-stream"],
    zstd: ["zstd", "-dc"],
    gzip: ["gzip", "-dc"],
  }[payload.format];
  // Data after the stream (the bzImage's tail) makes the tools complain; the output is whole.
  const r = spawnSync(tool[0] as string, tool.slice(1), {
    input: image.subarray(payload.offset),
    maxBuffer: 1 << 30,
  });
  if (!r.stdout || !isElf64(r.stdout)) return false;
  await Bun.write(path, r.stdout);
  return true;
}

/**
 * The kernel file QEMU is given, in OUT (vmlinuz is always the package's):
 * x86_64 vmlinux (PVH) when possible, else vmlinuz; arm64 the Image, which
 * is Debian's vmlinuz as it is, or gunzipped into Image when compressed.
 */
async function writeKernel(arch: GuestArch, src: GuestSources, out: string): Promise<string> {
  copyFileSync(src.kernel, `${out}/vmlinuz`);
  if (arch.name === "x86_64")
    return (await writeVmlinux(src, `${out}/vmlinux`)) ? "vmlinux" : "vmlinuz";
  rmSync(`${out}/Image`, { force: true });
  const shipped = readFileSync(src.kernel);
  if (isArm64Image(shipped)) return "vmlinuz";
  const image = isGzip(shipped) ? Bun.gunzipSync(shipped) : undefined;
  if (!image || !isArm64Image(image))
    throw new Error(`${src.kernel}: not an arm64 Image, nor a gzipped one`);
  await Bun.write(`${out}/Image`, image);
  return "Image";
}

/**
 * The command line: --arch, --front STANDIN, --out, --agent, --compress,
 * --default; `opt` for the rest.
 */
function options(argv: string[]) {
  const opt = (name: string, fallback: string) => {
    const i = argv.indexOf(name);
    return i >= 0 && argv[i + 1] !== undefined ? (argv[i + 1] as string) : fallback;
  };
  const arch = parseGuestArch(opt("--arch", "x86_64"));
  // --front STANDIN: our image in front mode for the tests (front.ts).
  const front = argv.includes("--front") ? resolve(opt("--front", "")) : undefined;
  const out = resolve(opt("--out", front ? `${arch.guestDir}-front` : arch.guestDir));
  const agent = resolve(opt("--agent", arch.agent));
  const compression = opt("--compress", "lz4");
  const defaultMode = opt("--default", "image");
  if (!(MODES as readonly string[]).includes(defaultMode)) {
    throw new Error(`--default: expected image or initramfs, got ${JSON.stringify(defaultMode)}`);
  }
  const compressor = COMPRESSORS[compression];
  if (compressor === undefined) throw new Error(`--compress: unknown ${compression}`);
  const compress = (input: Uint8Array) =>
    spawnSync(compressor.cmd, [...compressor.args, "-c"], { input, maxBuffer: 1 << 30 }).stdout;
  return { opt, arch, front, out, agent, defaultMode, compressor, compress };
}

/** --extra FILE,...: executables put in /opt of the image (a bench's). */
function extraEntries(list: string) {
  return list
    .split(",")
    .filter(Boolean)
    .map((file) => ({
      kind: "file" as const,
      path: `/opt/${file.slice(file.lastIndexOf("/") + 1)}`,
      mode: 0o755,
      source: resolve(file),
      origin: "--extra (a bench's executable)",
    }));
}

async function main(argv: string[]): Promise<void> {
  const { opt, arch, front, out, agent, defaultMode, compressor, compress } = options(argv);
  // The host's own agent is npm run rootfs's `npm run build`; another arch's is built here.
  if (arch.name !== "x86_64" && !argv.includes("--agent")) {
    run(process.execPath, [resolve(import.meta.dir, "../build/compile.ts"), "--arch", arch.name]);
  }
  if (!existsSync(agent)) throw new Error(`${agent} missing: run npm run build first`);

  const src =
    arch.name === "x86_64"
      ? hostSources(agent, opt("--kernel-release", ""))
      : debianSources(arch, agent, resolve(`dist/cache/debian-${arch.debianArch}`));
  const root = arch.name === "x86_64" ? PMEM_ROOT : BLK_ROOT;
  const { release, modulesDir, busybox, applets, ip, iptables, libraries } = src;
  const modulesDep = parseModulesDep(readFileSync(`${modulesDir}/modules.dep`, "utf8"));
  const builtin = parseModulesBuiltin(readFileSync(`${modulesDir}/modules.builtin`, "utf8"));
  const modules = resolveModules(GUEST_MODULES, modulesDep, builtin);
  const early = resolveModules(EARLY_MODULES, modulesDep, builtin).load;
  const late = modules.load.filter((m) => !early.includes(m));
  const bootModules = resolveModules(root.modules, modulesDep, builtin);
  const extensionFiles = iptables.extensions.flatMap((e) => ("source" in e ? [e.source] : []));
  const hostFiles = [
    busybox,
    ip,
    iptables.multi,
    ...extensionFiles,
    ...libraries.map((l) => l.source),
    ...[...modules.load, ...bootModules.load].map((m) => `${modulesDir}/${m}`),
  ];
  const packages = src.packagesOf(hostFiles);

  const base = buildManifest({
    kernelRelease: release,
    agent,
    init: resolve(import.meta.dir, "init.sh"),
    busybox,
    applets,
    ip,
    libraries,
    modules: early,
    lateModules: late,
    modulesDir,
    packageOf: (p) => packages.get(p),
    hostname: "netagent-guest",
    iptables,
  });
  const extra = extraEntries(opt("--extra", ""));
  const entries = [...(front ? [...base, ...frontEntries(front)] : base), ...extra];
  const checked = checkMachines(entries, arch.elfMachine, `${arch.name} image`);

  mkdirSync(out, { recursive: true });
  const cpio = Buffer.concat([...encodeCpio(entries.map(toRecord))]);
  const initrd = `${out}/initrd.img`;
  const packed = compress(cpio);
  if (!packed?.length) throw new Error(`${compressor.cmd} failed`);
  await Bun.write(initrd, packed);
  const kernelFile = await writeKernel(arch, src, out);

  const imageMode = await writeImageMode({
    out,
    rootEntries: entries,
    boot: {
      kernelRelease: release,
      init: resolve(import.meta.dir, "boot-init.sh"),
      busybox,
      applets,
      modules: bootModules.load,
      modulesDir,
      packageOf: (p) => packages.get(p),
      root,
    },
    pack: (bootEntries) => {
      const packed = compress(Buffer.concat([...encodeCpio(bootEntries.map(toRecord))]));
      if (!packed?.length) throw new Error(`${compressor.cmd} failed`);
      return packed;
    },
    sizeOf,
    machines: (bootEntries) =>
      checkMachines(bootEntries, arch.elfMachine, `${arch.name} boot initramfs`).machines,
  });
  await writeBootJsons(out, { root, kernelFile, imageMode, front, defaultMode });

  await report({
    out,
    sizeOf,
    entries,
    agent,
    initrd,
    cpioBytes: cpio.length,
    compress,
    compressor,
    release,
    kernelFile,
    modules,
    imageMode,
    root,
    defaultMode,
    arch,
    checked,
  });
}

/** boot-image.json, boot-initramfs.json, and boot.json as the default mode's. */
async function writeBootJsons(
  out: string,
  b: {
    root: typeof PMEM_ROOT | typeof BLK_ROOT;
    kernelFile: string;
    imageMode: Awaited<ReturnType<typeof writeImageMode>>;
    front: string | undefined;
    defaultMode: string;
  },
): Promise<void> {
  const { root, kernelFile, imageMode, front, defaultMode } = b;
  const imageFiles = { kernel: kernelFile, initrd: BOOT_INITRD, image: ROOT_IMAGE };
  const boots: Record<(typeof MODES)[number], BootJson> = {
    image:
      root === PMEM_ROOT
        ? imageBootJson({ ...imageFiles, imageBytes: imageMode.imagePadded })
        : blkImageBootJson(imageFiles),
    initramfs: initramfsBootJson({ kernel: kernelFile, initrd: "initrd.img" }),
  };
  if (front) for (const mode of MODES) boots[mode].cmdline.push(...FRONT_CMDLINE);
  for (const mode of MODES)
    await Bun.write(`${out}/boot-${mode}.json`, renderBootJson(boots[mode]));
  await Bun.write(`${out}/boot.json`, renderBootJson(boots[defaultMode as (typeof MODES)[number]]));
}

if (import.meta.main) {
  try {
    await main(process.argv.slice(2));
  } catch (err) {
    console.error(`rootfs: ${(err as Error).message}`);
    process.exit(1);
  }
}
