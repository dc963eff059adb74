/**
 * Test helper: our guest image in front mode (npm run rootfs -- --front:
 * rootfs/front.ts), dist/guest-front, rebuilt when it is missing or older
 * than its inputs (dist/netagent, rootfs sources, the static stand-in);
 * snapshotFrontImage copies it so a test boots the same files even if
 * dist/ is rebuilt meanwhile.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BootSpec, loadBootSpec } from "../../src/host/vm/boot-spec";
import { goStaticUpstream } from "../helpers/go";

const DIR = "dist/guest-front";
const FILES = ["vmlinuz", "boot-initrd.img", "root.erofs", "boot.json"];

export function ensureFrontImage(): void {
  if (!existsSync("dist/netagent")) throw new Error("dist/netagent missing: run npm run build");
  const standIn = goStaticUpstream();
  const inputs = [
    "dist/netagent",
    standIn,
    ...readdirSync("rootfs")
      .filter((f) => f.endsWith(".ts") || f.endsWith(".sh"))
      .map((f) => `rootfs/${f}`),
  ];
  const newest = Math.max(...inputs.map((f) => statSync(f).mtimeMs));
  const files = FILES.map((f) => `${DIR}/${f}`);
  if (files.every(existsSync) && Math.min(...files.map((f) => statSync(f).mtimeMs)) >= newest)
    return;
  const bun = process.versions.bun ? process.execPath : "node_modules/.bin/bun";
  const r = spawnSync(bun, ["rootfs/build.ts", "--front", standIn], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`rootfs --front build failed:\n${r.stdout}\n${r.stderr}`);
}

/** A copy of dist/guest-front in a temporary directory (removed by the caller) and its boot.json. */
export function snapshotFrontImage(): { dir: string; boot: BootSpec } {
  const dir = mkdtempSync(join(tmpdir(), "netagent-front-image-"));
  const files = [...FILES, ...(existsSync(`${DIR}/vmlinux`) ? ["vmlinux"] : [])];
  for (const f of files) copyFileSync(`${DIR}/${f}`, `${dir}/${f}`);
  return { dir, boot: loadBootSpec(`${dir}/boot.json`) };
}
