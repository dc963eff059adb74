/**
 * Test helper: makes sure an arch's guest directory (dist/guest, or
 * dist/guest-arm64) holds an image built from the current dist/netagent
 * and rootfs sources, rebuilding it otherwise (about 10 s for x86_64; the
 * arm64 one also compiles its agent, and the first time downloads Debian's
 * arm64 packages into dist/cache). snapshotGuestImage copies one so a test
 * boots the same files even if dist/ is rebuilt meanwhile.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IPFamily } from "../../src/gen/types_pb";
import { type BootSpec, loadBootSpec } from "../../src/host/vm/boot-spec";
import { GUEST_ARCHES, type GuestArchName } from "../../src/host/vm/guest-arch";

const FILES = [
  "vmlinuz",
  "initrd.img",
  "root.erofs",
  "boot-initrd.img",
  "boot.json",
  "boot-image.json",
  "boot-initramfs.json",
];

function newestInput(): number {
  const inputs = [
    "dist/netagent",
    ...readdirSync("rootfs")
      .filter((f) => f.endsWith(".ts") || f.endsWith(".sh"))
      .map((f) => `rootfs/${f}`),
  ];
  return Math.max(...inputs.map((f) => statSync(f).mtimeMs));
}

/** Builds the arch's image when it is missing or older than its inputs. */
export function ensureGuestImage(arch: GuestArchName = "x86_64"): void {
  if (!existsSync("dist/netagent")) throw new Error("dist/netagent missing: run npm run build");
  const image = FILES.map((f) => `${GUEST_ARCHES[arch].guestDir}/${f}`);
  const fresh =
    image.every((f) => existsSync(f)) &&
    Math.min(...image.map((f) => statSync(f).mtimeMs)) >= newestInput();
  if (fresh) return;
  const bun = process.versions.bun ? process.execPath : "node_modules/.bin/bun";
  const r = spawnSync(bun, ["rootfs/build.ts", "--arch", arch], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`rootfs build failed:\n${r.stdout}\n${r.stderr}`);
}

/**
 * A copy of the arch's image in a temporary directory (removed by the
 * caller) and its boot descriptions, read from the copy.
 */
export function snapshotGuestImage(arch: GuestArchName = "x86_64") {
  const from = GUEST_ARCHES[arch].guestDir;
  const dir = mkdtempSync(join(tmpdir(), "netagent-image-"));
  const files = [...FILES, ...(existsSync(`${from}/vmlinux`) ? ["vmlinux"] : [])];
  for (const f of files) copyFileSync(`${from}/${f}`, `${dir}/${f}`);
  const boot = (mode?: "image" | "initramfs"): BootSpec =>
    loadBootSpec(`${dir}/${mode ? `boot-${mode}.json` : "boot.json"}`);
  return { dir, boot };
}

/** The pod table of DESIGN.md as the Kata runtime sends it (the PTP scenario). */
export const PTP_ROUTES = [
  { dest: "", gateway: "10.248.246.145", device: "eth0", family: IPFamily.v4 },
  {
    dest: "10.248.246.144/28",
    gateway: "10.248.246.145",
    source: "10.248.246.146",
    device: "eth0",
    family: IPFamily.v4,
  },
  {
    dest: "10.248.246.145/32",
    source: "10.248.246.146",
    device: "eth0",
    scope: 253,
    family: IPFamily.v4,
  },
];
