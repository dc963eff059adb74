/**
 * Debian packages of another architecture for the guest image, never
 * installed on the build host: `apt-get download NAME:ARCH` into a cache
 * directory (under dist/), each unpacked with `dpkg-deb -x` into a
 * directory of its own. A package already unpacked is used as it is: the
 * cache is the build's input, removed to take newer packages. The host
 * needs ARCH among dpkg's architectures and apt's lists for it; both are
 * set up here when missing (scripts/debian-packages.sh does it too).
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

export interface UnpackedPackage {
  name: string;
  /** The .deb's file name (name, version, architecture). */
  deb: string;
  version: string;
  /** Where its files are: ROOT/usr/bin/..., as on an installed system. */
  root: string;
  /** Its Depends, first alternative of each, without versions. */
  depends: string[];
}

/** Package names of a control file's Depends field: the first alternative of each. */
export function parseDepends(field: string): string[] {
  return field
    .split(",")
    .map((d) =>
      (d.split("|")[0] ?? "")
        .trim()
        .replace(/\s*\(.*\)$/, "")
        .replace(/:any$/, ""),
    )
    .filter(Boolean);
}

function run(cmd: string, args: string[], cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", maxBuffer: 1 << 26 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}: ${r.stderr.trim()}`);
  }
  return r.stdout;
}

/** Makes `arch` one of dpkg's architectures, with apt's lists for it. */
export function enableArchitecture(arch: string): void {
  const native = run("dpkg", ["--print-architecture"]).trim();
  if (arch === native) return;
  const foreign = run("dpkg", ["--print-foreign-architectures"]).split("\n");
  if (foreign.includes(arch)) return;
  console.log(`rootfs: dpkg --add-architecture ${arch}; apt-get update`);
  run("dpkg", ["--add-architecture", arch]);
  run("apt-get", ["update", "-qq"]);
}

export class DebianCache {
  private readonly debs: string;
  private readonly roots: string;
  private readonly unpacked = new Map<string, UnpackedPackage>();
  private updated = false;

  constructor(
    /** The cache directory, e.g. dist/cache/debian-arm64. */
    readonly dir: string,
    /** Debian's architecture name: arm64. */
    readonly arch: string,
  ) {
    this.debs = join(dir, "debs");
    this.roots = join(dir, "root");
  }

  /** The package, downloaded and unpacked unless the cache has it; throws when there is none. */
  get(name: string): UnpackedPackage {
    const [pkg] = this.ensure([name]);
    if (!pkg) throw new Error(`apt-get download ${name}:${this.arch}: no such package`);
    return pkg;
  }

  /**
   * The packages that exist for this architecture, fetched with one
   * download for all those not cached; names without a candidate (an
   * arch-all or virtual package) are left out, and remembered as such.
   */
  ensure(names: readonly string[]): UnpackedPackage[] {
    const missing = names.filter(
      (n) => !this.unpacked.has(n) && !existsSync(this.stamp(n)) && !existsSync(this.none(n)),
    );
    if (missing.length > 0) this.fetch(missing);
    return names.flatMap((n) => {
      const known = this.unpacked.get(n);
      if (known) return [known];
      if (!existsSync(this.stamp(n))) return [];
      const deb = readFileSync(this.stamp(n), "utf8").trim();
      const field = (f: string) => run("dpkg-deb", ["-f", join(this.debs, deb), f]).trim();
      const pkg = {
        name: n,
        deb,
        version: field("Version"),
        root: join(this.roots, n),
        depends: parseDepends([field("Pre-Depends"), field("Depends")].filter(Boolean).join(",")),
      };
      this.unpacked.set(n, pkg);
      return [pkg];
    });
  }

  /** Every package unpacked so far in this build. */
  all(): UnpackedPackage[] {
    return [...this.unpacked.values()];
  }

  private update(): void {
    this.updated = true;
    run("apt-get", ["update", "-qq"]);
  }

  private stamp(name: string): string {
    return join(this.roots, `${name}.deb-name`);
  }

  private none(name: string): string {
    return join(this.roots, `${name}.no-candidate`);
  }

  private fetch(names: string[]): void {
    mkdirSync(this.debs, { recursive: true });
    mkdirSync(this.roots, { recursive: true });
    let wanted = names;
    while (wanted.length > 0) {
      const r = spawnSync(
        "apt-get",
        // The cache belongs to root; apt's sandbox user could not write it.
        [
          "download",
          "-qq",
          "-o",
          "APT::Sandbox::User=root",
          ...wanted.map((n) => `${n}:${this.arch}`),
        ],
        { cwd: this.debs, encoding: "utf8" },
      );
      if (r.status === 0) break;
      const said = `${r.stderr}${r.stdout}`;
      const names = (re: RegExp) => [...said.matchAll(re)].map((m) => m[1] as string);
      // Known, but nothing for this architecture (arch-all, such as debconf): final.
      const none = names(/Can't select candidate version from package ([^\s:]+):/g);
      // Unknown: final only once the lists are fresh.
      const unknown = names(/Unable to locate package ([^\s:]+):/g);
      if (unknown.length > 0 && !this.updated) {
        this.update();
        continue;
      }
      const absent = new Set([...none, ...unknown]);
      const left = wanted.filter((n) => !absent.has(n));
      if (left.length < wanted.length) {
        for (const n of absent) writeFileSync(this.none(n), "");
        wanted = left;
      } else if (!this.updated) {
        // Lists older than the archive name versions it no longer has.
        this.update();
      } else {
        throw new Error(`apt-get download ${wanted.join(" ")} (${this.arch}): ${said.trim()}`);
      }
    }
    const debs = readdirSync(this.debs);
    for (const name of wanted) {
      const deb = debs.find((f) => f.startsWith(`${name}_`) && f.endsWith(`_${this.arch}.deb`));
      if (deb === undefined) throw new Error(`apt-get download ${name}:${this.arch} wrote no .deb`);
      const root = join(this.roots, name);
      // Unpacked aside and renamed whole: a build killed meanwhile leaves no half tree.
      const partial = `${root}.partial`;
      rmSync(partial, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
      run("dpkg-deb", ["-x", join(this.debs, deb), partial]);
      renameSync(partial, root);
      writeFileSync(this.stamp(name), `${deb}\n`);
      console.log(`rootfs: ${this.arch}: ${deb}`);
    }
  }
}
