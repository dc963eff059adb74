/**
 * What rootfs/build.ts built, said twice: manifest.txt beside the images
 * (every entry with its size and machine, then the totals) and the same
 * totals on stdout: kernel, modules, sizes unpacked and compressed, the
 * agent's share, image mode, the default boot, the architecture.
 */
import { readFileSync, statSync } from "node:fs";
import type { GuestArch } from "../src/host/vm/guest-arch";
import type { BLK_ROOT, PMEM_ROOT } from "./boot-manifest";
import type { checkMachines } from "./elf-check";
import { BOOT_INITRD, ROOT_IMAGE, type writeImageMode } from "./image-mode";
import { AGENT_PATH, type Entry, renderManifest } from "./manifest";
import type { resolveModules } from "./modules";

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB (${n} bytes)`;
const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1)}%`;

/** What was built, in manifest.txt and on stdout: sizes, modules, modes, architecture. */
export async function report(r: {
  out: string;
  sizeOf: (e: Entry) => number;
  entries: Entry[];
  agent: string;
  initrd: string;
  cpioBytes: number;
  compress: (input: Uint8Array) => Uint8Array;
  compressor: { cmd: string; args: string[] };
  release: string;
  kernelFile: string;
  modules: ReturnType<typeof resolveModules>;
  imageMode: Awaited<ReturnType<typeof writeImageMode>>;
  root: typeof PMEM_ROOT | typeof BLK_ROOT;
  defaultMode: string;
  arch: GuestArch;
  checked: ReturnType<typeof checkMachines>;
}): Promise<void> {
  const {
    out,
    sizeOf,
    entries,
    agent,
    initrd,
    compress,
    compressor,
    release,
    kernelFile,
    modules,
  } = r;
  const { imageMode, root, defaultMode, arch, checked } = r;
  const sizes = new Map(entries.map((e) => [e, sizeOf(e)]));
  const unpacked = [...sizes.values()].reduce((a, b) => a + b, 0);
  const agentSize = statSync(agent).size;
  const compressed = statSync(initrd).size;
  const agentCompressed = compress(readFileSync(agent)).length;
  const totals: [string, string][] = [
    ["kernel", `${release} (${mib(statSync(`${out}/vmlinuz`).size)})`],
    [
      "pvh",
      kernelFile === "vmlinux"
        ? `vmlinux for PVH boot (${mib(statSync(`${out}/vmlinux`).size)})`
        : "no",
    ],
    ["modules", modules.load.map((m) => m.replace(/^.*\//, "")).join(" ")],
    ["built in", modules.builtin.join(" ") || "(none of the wanted modules)"],
    ["entries", String(entries.length)],
    ["unpacked", `${mib(unpacked)} (file contents; cpio ${mib(r.cpioBytes)})`],
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
      `${ROOT_IMAGE} ${mib(imageMode.imageBytes)} (device ${mib(imageMode.imagePadded)}), ${BOOT_INITRD} ${mib(imageMode.bootInitrdBytes)}, root ${root.device} ${root.options}`,
    ],
    ["boot.json", `${defaultMode} mode`],
    ["architecture", `${arch.name}: ${checked.summary}`],
  ];
  await Bun.write(
    `${out}/manifest.txt`,
    renderManifest(
      entries,
      (e) => sizes.get(e) ?? 0,
      totals,
      (e) => checked.machines.get(e),
    ),
  );
  for (const [k, v] of totals) console.log(`rootfs: ${k}: ${v}`);
  console.log(
    `rootfs: wrote ${out}/: ${kernelFile === "vmlinuz" ? "" : `${kernelFile}, `}vmlinuz, initrd.img, ${ROOT_IMAGE}, ${BOOT_INITRD}, boot.json (${defaultMode}), boot-image.json, boot-initramfs.json, manifest.txt, boot-manifest.txt`,
  );
}
