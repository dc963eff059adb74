/**
 * Reads a guest's boot.json (the contract `npm run rootfs` writes, see
 * rootfs/boot-json.ts) into absolute paths and ready QEMU arguments: the
 * boot description the VM runner takes. The parse is pure; only
 * loadBootSpec touches the file system.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import * as v from "valibot";

/** A boot description with absolute paths, as the VM runner uses it. */
export interface BootSpec {
  /** Which boot.json it came from (for messages). */
  source: string;
  kernel: string;
  initrd: string;
  /** The read-only root image, or undefined when everything is in the initramfs. */
  image?: string;
  /** Kernel command line words the image needs. */
  cmdline: string[];
  /** QEMU arguments attaching the image, with the image's path filled in. */
  qemu: string[];
}

/** Stands for the image's path in boot.json's `qemu` words. */
export const IMAGE_PLACEHOLDER = "{image}";

const Word = v.pipe(v.string(), v.minLength(1), v.maxLength(4096));
const Path = v.pipe(v.string(), v.minLength(1), v.maxLength(4096));
const BootJsonSchema = v.strictObject({
  kernel: Path,
  initrd: Path,
  image: v.nullable(Path),
  cmdline: v.pipe(v.array(Word), v.maxLength(64)),
  qemu: v.pipe(v.array(Word), v.maxLength(256)),
});

/**
 * Parses boot.json's text; paths are resolved against `dir` (the file's
 * directory). Throws naming the file and the field on anything else than
 * the contract: unknown keys, a cmdline word with white space, a `qemu`
 * word naming the image when there is none.
 */
export function parseBootSpec(text: string, dir: string, source = `${dir}/boot.json`): BootSpec {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source}: not JSON (${(err as Error).message})`);
  }
  const r = v.safeParse(BootJsonSchema, raw);
  if (!r.success) {
    const issue = r.issues[0];
    const where = issue ? v.getDotPath(issue) : null;
    throw new Error(`${source}: ${where ?? "top level"}: ${issue?.message ?? "invalid"}`);
  }
  const b = r.output;
  const at = (p: string) => (isAbsolute(p) ? p : resolve(dir, p));
  for (const w of b.cmdline) {
    if (/\s/.test(w)) throw new Error(`${source}: cmdline word ${JSON.stringify(w)} has spaces`);
  }
  const image = b.image === null ? undefined : at(b.image);
  const qemu = b.qemu.map((w) => {
    if (!w.includes(IMAGE_PLACEHOLDER)) return w;
    if (image === undefined)
      throw new Error(`${source}: qemu word ${w} names {image}, image is null`);
    // QEMU option values escape a comma by doubling it.
    return w.replaceAll(IMAGE_PLACEHOLDER, image.replaceAll(",", ",,"));
  });
  return {
    source,
    kernel: at(b.kernel),
    initrd: at(b.initrd),
    ...(image === undefined ? {} : { image }),
    cmdline: [...b.cmdline],
    qemu,
  };
}

/** Reads and parses a boot.json; throws when it or a file it names is missing. */
export function loadBootSpec(path: string): BootSpec {
  const file = resolve(path);
  if (!existsSync(file)) throw new Error(`${file} missing: run npm run rootfs`);
  const spec = parseBootSpec(readFileSync(file, "utf8"), dirname(file), file);
  for (const f of [spec.kernel, spec.initrd, spec.image]) {
    if (f !== undefined && !existsSync(f))
      throw new Error(`${f} (from ${file}) missing: run npm run rootfs`);
  }
  return spec;
}

/** The boot.json of a mode in dist/guest: boot.json is the default mode's. */
export function bootJsonPath(mode?: "image" | "initramfs", dir = "dist/guest"): string {
  return mode === undefined ? `${dir}/boot.json` : `${dir}/boot-${mode}.json`;
}
