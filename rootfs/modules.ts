/**
 * Kernel modules for the guest, resolved from the kernel's own modules.dep
 * and modules.builtin rather than a hand-kept list. Pure: callers pass the
 * text of those files.
 */

/** A module's name as modprobe spells it: basename, no `.ko*`, `-` as `_`. */
export function moduleName(path: string): string {
  const base = path.slice(path.lastIndexOf("/") + 1);
  return base.replace(/\.ko(\.(xz|zst|gz))?$/, "").replaceAll("-", "_");
}

/** modules.dep as a map from module path to the paths it depends on. */
export function parseModulesDep(text: string): Map<string, string[]> {
  const deps = new Map<string, string[]>();
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const path = line.slice(0, colon).trim();
    if (path === "") continue;
    deps.set(
      path,
      line
        .slice(colon + 1)
        .trim()
        .split(/\s+/)
        .filter(Boolean),
    );
  }
  return deps;
}

/** The names of the modules built into the kernel (modules.builtin lists their paths). */
export function parseModulesBuiltin(text: string): Set<string> {
  return new Set(
    text
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .map(moduleName),
  );
}

export interface ResolvedModules {
  /** Module paths relative to /lib/modules/RELEASE, every one after its dependencies. */
  load: string[];
  /** Wanted modules that are built into the kernel: nothing to load. */
  builtin: string[];
}

/**
 * Resolves `wanted` module names to the files to load, dependencies first
 * (a depth-first post-order over modules.dep, so the order is stable).
 * Throws when a wanted module is neither built in nor in modules.dep, or
 * when modules.dep names a dependency it does not itself list.
 */
export function resolveModules(
  wanted: readonly string[],
  deps: ReadonlyMap<string, readonly string[]>,
  builtin: ReadonlySet<string>,
): ResolvedModules {
  const byName = new Map<string, string>();
  for (const path of deps.keys()) byName.set(moduleName(path), path);

  const load: string[] = [];
  const seen = new Set<string>();
  const visit = (path: string, via: string[]) => {
    if (seen.has(path)) return;
    const mine = deps.get(path);
    if (mine === undefined) {
      throw new Error(`modules.dep: ${via.join(" -> ")} needs ${path}, which it does not list`);
    }
    seen.add(path);
    for (const dep of mine) visit(dep, [...via, moduleName(path)]);
    load.push(path);
  };

  const inKernel: string[] = [];
  for (const raw of wanted) {
    const name = raw.replaceAll("-", "_");
    if (builtin.has(name)) {
      inKernel.push(name);
      continue;
    }
    const path = byName.get(name);
    if (path === undefined) {
      throw new Error(
        `kernel module ${JSON.stringify(raw)} is neither built in nor in modules.dep`,
      );
    }
    visit(path, []);
  }
  return { load, builtin: inKernel };
}
