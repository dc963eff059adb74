/**
 * The shared objects a set of executables needs, found without running
 * them (they may be for another architecture): each file's DT_NEEDED names
 * and PT_INTERP, searched in the loader's directories among the unpacked
 * packages, then the libraries' own, until nothing new is named. Pure
 * apart from what the caller injects (the lookup in the packages, the
 * reader, the fetch of more packages), so it is tested with made-up ones.
 */
import type { ElfInfo } from "./elf";

/** A file of an unpacked package: where it goes in the image, where it is, whose it is. */
export interface PackageFile {
  /** Path in the image (and in the package): /lib/aarch64-linux-gnu/libc.so.6. */
  path: string;
  /** Host path of its contents, links resolved inside the package. */
  source: string;
  /** Debian package it comes from (or a name like dist/netagent-arm64). */
  pkg: string;
}

export interface NeededInputs {
  /** The executables and dlopen()ed modules whose libraries are wanted. */
  roots: readonly PackageFile[];
  /** Directories the dynamic loader searches for a soname, in its order. */
  libDirs: readonly string[];
  /** The packaged file at an image path, among the packages unpacked so far. */
  lookup: (path: string) => PackageFile | undefined;
  /**
   * Unpacks more of `pkg`'s dependencies (the libraries it declares);
   * false when there is nothing more to unpack for it.
   */
  expand: (pkg: string) => boolean;
  read: (file: PackageFile) => ElfInfo | undefined;
}

/**
 * The libraries (and loaders) the roots need, each once, in the order
 * first named. Throws naming the file and the soname when a library is in
 * none of the packages, even after its package's dependencies were added.
 */
export function resolveNeeded(inputs: NeededInputs): PackageFile[] {
  const found = new Map<string, PackageFile>();
  const queue = [...inputs.roots];
  const find = (name: string, by: PackageFile): PackageFile => {
    const paths = name.includes("/") ? [name] : inputs.libDirs.map((d) => `${d}/${name}`);
    for (;;) {
      for (const p of paths) {
        const hit = inputs.lookup(p);
        if (hit) return hit;
      }
      if (!inputs.expand(by.pkg)) {
        throw new Error(
          `${by.path} (${by.pkg}) needs ${name}, which none of the unpacked packages has in ${inputs.libDirs.join(" ")}`,
        );
      }
    }
  };
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    const elf = inputs.read(file);
    if (!elf) continue;
    for (const name of [...(elf.interp ? [elf.interp] : []), ...elf.needed]) {
      const lib = find(name, file);
      if (found.has(lib.path)) continue;
      found.set(lib.path, lib);
      queue.push(lib);
    }
  }
  return [...found.values()];
}
