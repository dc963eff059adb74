/**
 * Test helper: makes sure dist/guest holds an image built from the current
 * dist/netagent and rootfs sources, rebuilding it (about 10 s) otherwise.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { IPFamily } from "../../src/gen/types_pb";

const IMAGE = [
  "dist/guest/vmlinuz",
  "dist/guest/initrd.img",
  "dist/guest/root.erofs",
  "dist/guest/boot-initrd.img",
  "dist/guest/boot.json",
  "dist/guest/boot-image.json",
  "dist/guest/boot-initramfs.json",
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

export function ensureGuestImage(): void {
  if (!existsSync("dist/netagent")) throw new Error("dist/netagent missing: run npm run build");
  const fresh =
    IMAGE.every((f) => existsSync(f)) &&
    Math.min(...IMAGE.map((f) => statSync(f).mtimeMs)) >= newestInput();
  if (fresh) return;
  const bun = process.versions.bun ? process.execPath : "node_modules/.bin/bun";
  const r = spawnSync(bun, ["rootfs/build.ts"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`rootfs build failed:\n${r.stdout}\n${r.stderr}`);
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
