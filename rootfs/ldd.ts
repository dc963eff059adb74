/**
 * The shared objects an executable needs, read from `ldd` output. Pure:
 * the caller runs ldd and passes its stdout.
 */

export interface LinkNeeds {
  /** Absolute paths of the libraries and the dynamic loader, in ldd's order. */
  paths: string[];
  /** True when ldd says the executable is static. */
  isStatic: boolean;
}

/**
 * Parses ldd output. The vDSO (no file) is skipped; a library ldd could not
 * find is an error naming it, since the image would not run.
 */
export function parseLdd(text: string): LinkNeeds {
  const paths: string[] = [];
  let isStatic = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    if (/statically linked|not a dynamic executable/.test(line)) {
      isStatic = true;
      continue;
    }
    const arrow = /^(\S+)\s+=>\s+(.*?)\s*(\(0x[0-9a-f]+\))?$/.exec(line);
    if (arrow) {
      const [, soname, target = ""] = arrow;
      if (target === "not found") throw new Error(`ldd: ${soname} not found`);
      if (target.startsWith("/")) paths.push(target);
      continue; // `linux-vdso.so.1 =>  (0x...)` on old ldd: no file
    }
    const bare = /^(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line);
    if (bare) paths.push(bare[1] as string);
    // `linux-vdso.so.1 (0x...)`: provided by the kernel, nothing to copy.
  }
  return { paths, isStatic };
}
