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
 * Options: --out DIR, --agent PATH, --kernel-release RELEASE,
 * --compress lz4|zstd|gzip (default lz4), --default image|initramfs.
 */
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { resolve } from "node:path";
import { imageBootJson, initramfsBootJson, renderBootJson } from "./boot-json";
import { BOOT_MODULES } from "./boot-manifest";
import { type CpioRecord, encodeCpio, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG } from "./cpio";
import { BOOT_INITRD, ROOT_IMAGE, writeImageMode } from "./image-mode";
import { IPTABLES_MODULES, type IptablesInputs } from "./iptables";
import { probeIptables } from "./iptables-probe";
import { findKernelPayload, isElf64, supportsPvh } from "./kernel";
import { parseLdd } from "./ldd";
import { AGENT_PATH, buildManifest, type Entry, renderManifest } from "./manifest";
import { parseModulesBuiltin, parseModulesDep, resolveModules } from "./modules";

/** The modules the guest needs; their dependencies come from modules.dep. */
export const GUEST_MODULES = [
  "virtio_pci",
  "virtio_net",
  "virtio_console",
  "vsock",
  "vmw_vsock_virtio_transport",
  ...IPTABLES_MODULES,
];
const PACKAGES = [
  "busybox-static",
  "iproute2",
  "linux-image-amd64",
  "zstd",
  "lz4",
  "erofs-utils",
  "iptables",
];
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

function run(cmd: string, args: string[], input?: Uint8Array): string {
  const r = spawnSync(cmd, args, { input, encoding: "buffer", maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}: ${r.stderr.toString().trim()}`);
  }
  return r.stdout.toString();
}

function ensurePackages(): void {
  const missing = PACKAGES.filter((p) => {
    const r = spawnSync("dpkg-query", ["-W", "-f=$" + "{Status}", p], { encoding: "utf8" });
    return !r.stdout?.includes("install ok installed");
  });
  if (missing.length === 0) return;
  console.log(`rootfs: installing ${missing.join(" ")}`);
  run("apt-get", ["update", "-qq"]);
  const r = spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (r.status !== 0) throw new Error(`apt-get install ${missing.join(" ")} failed`);
}

/** The newest kernel with both an image in /boot and modules in /lib/modules. */
function findKernelRelease(): string {
  const releases = readdirSync("/lib/modules")
    .filter((r) => existsSync(`/boot/vmlinuz-${r}`) && existsSync(`/lib/modules/${r}/modules.dep`))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const newest = releases.at(-1);
  if (newest === undefined) throw new Error("no kernel in /boot with modules in /lib/modules");
  return newest;
}

/** Debian package of each path, asking dpkg once (merged /usr: try the /usr and real paths too). */
function packagesOf(paths: readonly string[]): Map<string, string> {
  const candidates = new Map<string, string>();
  for (const p of paths) {
    for (const c of [p, `/usr${p}`, p.replace(/^\/usr\//, "/"), realpath(p)])
      if (!candidates.has(c)) candidates.set(c, p);
  }
  const r = spawnSync("dpkg", ["-S", ...candidates.keys()], { encoding: "utf8" });
  const found = new Map<string, string>();
  for (const line of (r.stdout ?? "").split("\n")) {
    const m = /^([^:]+)(?::[a-z0-9]+)?: (\/.*)$/.exec(line);
    const owner = m && candidates.get(m[2] as string);
    if (m && owner && !found.has(owner)) found.set(owner, m[1] as string);
  }
  return found;
}

function realpath(p: string): string {
  try {
    return run("readlink", ["-f", p]).trim();
  } catch {
    return p;
  }
}

function which(cmd: string): string {
  return run("sh", ["-c", `command -v ${cmd}`]).trim();
}

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
async function writeVmlinux(release: string, path: string): Promise<boolean> {
  rmSync(path, { force: true });
  const config = existsSync(`/boot/config-${release}`)
    ? readFileSync(`/boot/config-${release}`, "utf8")
    : "";
  if (!supportsPvh(config)) return false;
  const image = readFileSync(`/boot/vmlinuz-${release}`);
  const payload = findKernelPayload(image, config);
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

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB (${n} bytes)`;

async function main(argv: string[]): Promise<void> {
  const opt = (name: string, fallback: string) => {
    const i = argv.indexOf(name);
    return i >= 0 && argv[i + 1] !== undefined ? (argv[i + 1] as string) : fallback;
  };
  const out = resolve(opt("--out", "dist/guest"));
  const agent = resolve(opt("--agent", "dist/netagent"));
  const compression = opt("--compress", "lz4");
  const defaultMode = opt("--default", "image");
  if (!(MODES as readonly string[]).includes(defaultMode)) {
    throw new Error(`--default: expected image or initramfs, got ${JSON.stringify(defaultMode)}`);
  }
  const compressor = COMPRESSORS[compression];
  if (compressor === undefined) throw new Error(`--compress: unknown ${compression}`);
  const compress = (input: Uint8Array) =>
    spawnSync(compressor.cmd, [...compressor.args, "-c"], { input, maxBuffer: 1 << 30 }).stdout;
  if (!existsSync(agent)) throw new Error(`${agent} missing: run npm run build first`);

  ensurePackages();
  const release = opt("--kernel-release", findKernelRelease());
  const modulesDir = `/lib/modules/${release}`;
  const modulesDep = parseModulesDep(readFileSync(`${modulesDir}/modules.dep`, "utf8"));
  const builtin = parseModulesBuiltin(readFileSync(`${modulesDir}/modules.builtin`, "utf8"));
  const modules = resolveModules(GUEST_MODULES, modulesDep, builtin);
  const bootModules = resolveModules(BOOT_MODULES, modulesDep, builtin);
  const busybox = which("busybox");
  const ip = realpath(which("ip"));
  const iptables: IptablesInputs = probeIptables();
  const extensionFiles = iptables.extensions.flatMap((e) => ("source" in e ? [e.source] : []));
  const libraries = [agent, ip, iptables.multi, ...extensionFiles].flatMap(
    (exe) => parseLdd(run("ldd", [exe])).paths,
  );
  const applets = run(busybox, ["--list-full"]).split("\n").filter(Boolean);
  const hostFiles = [
    busybox,
    ip,
    iptables.multi,
    ...extensionFiles,
    ...libraries,
    ...[...modules.load, ...bootModules.load].map((m) => `${modulesDir}/${m}`),
  ];
  const packages = packagesOf(hostFiles);

  const entries = buildManifest({
    kernelRelease: release,
    agent,
    init: resolve(import.meta.dir, "init.sh"),
    busybox,
    applets,
    ip,
    libraries,
    modules: modules.load,
    modulesDir,
    packageOf: (p) => packages.get(p),
    hostname: "netagent-guest",
    iptables,
  });

  mkdirSync(out, { recursive: true });
  const cpio = Buffer.concat([...encodeCpio(entries.map(toRecord))]);
  const initrd = `${out}/initrd.img`;
  const packed = compress(cpio);
  if (!packed?.length) throw new Error(`${compressor.cmd} failed`);
  await Bun.write(initrd, packed);
  copyFileSync(`/boot/vmlinuz-${release}`, `${out}/vmlinuz`);
  const pvh = await writeVmlinux(release, `${out}/vmlinux`);
  const kernelFile = pvh ? "vmlinux" : "vmlinuz";

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
    },
    pack: (bootEntries) => {
      const packed = compress(Buffer.concat([...encodeCpio(bootEntries.map(toRecord))]));
      if (!packed?.length) throw new Error(`${compressor.cmd} failed`);
      return packed;
    },
    sizeOf,
  });
  const boots = {
    image: imageBootJson({
      kernel: kernelFile,
      initrd: BOOT_INITRD,
      image: ROOT_IMAGE,
      imageBytes: imageMode.imagePadded,
    }),
    initramfs: initramfsBootJson({ kernel: kernelFile, initrd: "initrd.img" }),
  };
  for (const mode of MODES)
    await Bun.write(`${out}/boot-${mode}.json`, renderBootJson(boots[mode]));
  await Bun.write(`${out}/boot.json`, renderBootJson(boots[defaultMode as (typeof MODES)[number]]));

  const sizes = new Map(entries.map((e) => [e, sizeOf(e)]));
  const unpacked = [...sizes.values()].reduce((a, b) => a + b, 0);
  const agentSize = statSync(agent).size;
  const compressed = statSync(initrd).size;
  const agentCompressed = compress(readFileSync(agent)).length;
  const totals: [string, string][] = [
    ["kernel", `${release} (${mib(statSync(`${out}/vmlinuz`).size)})`],
    ["pvh", pvh ? `vmlinux for PVH boot (${mib(statSync(`${out}/vmlinux`).size)})` : "no"],
    ["modules", modules.load.map((m) => m.replace(/^.*\//, "")).join(" ")],
    ["built in", modules.builtin.join(" ") || "(none of the wanted modules)"],
    ["entries", String(entries.length)],
    ["unpacked", `${mib(unpacked)} (file contents; cpio ${mib(cpio.length)})`],
    [
      "compressed",
      `${mib(compressed)} (initrd.img, ${compressor.cmd} ${compressor.args.join(" ")})`,
    ],
    ["agent", `${AGENT_PATH}: ${mib(agentSize)}, ${pct(agentSize, unpacked)} of unpacked`],
    [
      "agent packed",
      `${mib(agentCompressed)} alone, ~${pct(agentCompressed, compressed)} of compressed`,
    ],
    [
      "image mode",
      `${ROOT_IMAGE} ${mib(imageMode.imageBytes)} (device ${mib(imageMode.imagePadded)}), ${BOOT_INITRD} ${mib(imageMode.bootInitrdBytes)}`,
    ],
    ["boot.json", `${defaultMode} mode`],
  ];
  await Bun.write(
    `${out}/manifest.txt`,
    renderManifest(entries, (e) => sizes.get(e) ?? 0, totals),
  );
  for (const [k, v] of totals) console.log(`rootfs: ${k}: ${v}`);
  console.log(
    `rootfs: wrote ${out}/: vmlinuz, initrd.img, ${ROOT_IMAGE}, ${BOOT_INITRD}, boot.json (${defaultMode}), boot-image.json, boot-initramfs.json, manifest.txt, boot-manifest.txt`,
  );
}

const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)}%`;

if (import.meta.main) {
  try {
    await main(process.argv.slice(2));
  } catch (err) {
    console.error(`rootfs: ${(err as Error).message}`);
    process.exit(1);
  }
}
