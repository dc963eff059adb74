/**
 * The image's sources for a guest of another architecture (arm64 built on
 * x86_64): Debian's packages of that architecture downloaded and unpacked
 * in a cache (debian-cache.ts), never installed, and nothing of them run.
 * The kernel is linux-image-ARCH's, its modules.dep made by depmod -b (it
 * reads any architecture's modules); libraries come from each binary's
 * DT_NEEDED and PT_INTERP (elf-deps.ts), looked up in the unpacked
 * packages, fetching a package's declared library dependencies when
 * something it holds names a library none has yet.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { posix } from "node:path";
import type { GuestArch } from "../src/host/vm/guest-arch";
import { DebianCache, enableArchitecture } from "./debian-cache";
import { readElf } from "./elf";
import { type PackageFile, resolveNeeded } from "./elf-deps";
import { xtablesDir } from "./iptables";
import { probeIptables } from "./iptables-probe";
import { AGENT_PATH, IP_PATH } from "./manifest";
import { ensureHostPackages, run } from "./run";
import type { GuestSources } from "./sources";

/** Host tools the build runs (of the host's own architecture). */
const HOST_PACKAGES = ["busybox-static", "zstd", "lz4", "erofs-utils", "kmod"];
const XTABLES_MULTI = "/usr/sbin/xtables-nft-multi";
const MAX_LINKS = 40;

/**
 * The host file behind `path` inside `root`, following links the way the
 * guest will (an absolute target is inside the image, not on the host);
 * undefined when it is not there or is not a regular file.
 */
export function resolveInRoot(root: string, path: string, hops = 0): string | undefined {
  const parts = path.split("/").filter(Boolean);
  let done = "";
  for (const [i, part] of parts.entries()) {
    const next = `${done}/${part}`;
    let isLink: boolean;
    try {
      isLink = lstatSync(root + next).isSymbolicLink();
    } catch {
      return undefined;
    }
    if (isLink) {
      if (hops >= MAX_LINKS) throw new Error(`${root}: too many links resolving ${path}`);
      const target = readlinkSync(root + next);
      const rest = parts.slice(i + 1).join("/");
      const joined = posix.normalize(
        `${target.startsWith("/") ? target : `${done}/${target}`}/${rest}`,
      );
      return resolveInRoot(root, joined.replace(/\/$/, ""), hops + 1);
    }
    done = next;
  }
  return done !== "" && statSync(root + done).isFile() ? root + done : undefined;
}

/** The image's sources from `arch`'s Debian packages, cached under `cacheDir`. */
export function debianSources(arch: GuestArch, agent: string, cacheDir: string): GuestSources {
  ensureHostPackages(HOST_PACKAGES);
  enableArchitecture(arch.debianArch);
  const cache = new DebianCache(cacheDir, arch.debianArch);

  const meta = cache.get(`linux-image-${arch.debianArch}`);
  const imagePkg = meta.depends.find((d) => d.startsWith("linux-image-"));
  if (!imagePkg) throw new Error(`${meta.name} names no linux-image package (${meta.depends})`);
  const kernelPkg = cache.get(imagePkg);
  const [release, ...more] = readdirSync(`${kernelPkg.root}/lib/modules`);
  if (release === undefined || more.length > 0) {
    throw new Error(
      `${kernelPkg.name}: expected one release in lib/modules, found ${release} ${more}`,
    );
  }
  const modulesDir = `${kernelPkg.root}/lib/modules/${release}`;
  // Debian's postinst runs depmod; the package itself has no modules.dep.
  if (!existsSync(`${modulesDir}/modules.dep`)) run("depmod", ["-b", kernelPkg.root, release]);

  const [busyboxPkg, iproute2, iptablesPkg] = cache.ensure([
    "busybox-static",
    "iproute2",
    "iptables",
    "libc6",
  ]);
  if (!busyboxPkg || !iproute2 || !iptablesPkg)
    throw new Error(`${arch.debianArch}: busybox-static, iproute2 or iptables missing`);
  const busybox = `${busyboxPkg.root}/bin/busybox`;
  const applets = busyboxApplets(busyboxPkg.version);

  const ip = resolveInRoot(iproute2.root, "/bin/ip") ?? resolveInRoot(iproute2.root, IP_PATH);
  if (!ip) throw new Error(`${iproute2.deb} has no /bin/ip`);
  const iptables = probeIptables(
    `${iptablesPkg.root}${xtablesDir(arch.multiarch)}`,
    `${iptablesPkg.root}${XTABLES_MULTI}`,
    xtablesDir(arch.multiarch),
  );
  // libc6 above: the agent (Bun's runtime, glibc only) has no package to declare it.

  const lookup = (path: string): PackageFile | undefined => {
    for (const pkg of cache.all()) {
      const source = resolveInRoot(pkg.root, path);
      if (source) return { path, source, pkg: pkg.name };
    }
    return undefined;
  };
  // A package's declared dependencies, all at once (arch-all ones such as debconf have no
  // candidate and hold no library); false once there are none left to add.
  const expanded = new Set<string>();
  const expand = (name: string) => {
    const pkg = cache.all().find((p) => p.name === name);
    if (!pkg || expanded.has(name)) return false;
    expanded.add(name);
    const known = new Set(cache.all().map((p) => p.name));
    return cache.ensure(pkg.depends.filter((d) => !known.has(d))).length > 0;
  };
  const roots: PackageFile[] = [
    { path: AGENT_PATH, source: agent, pkg: agent },
    { path: IP_PATH, source: ip, pkg: iproute2.name },
    { path: XTABLES_MULTI, source: iptables.multi, pkg: iptablesPkg.name },
    ...iptables.extensions.flatMap((e) =>
      "source" in e
        ? [{ path: `${iptables.dir}/${e.name}`, source: e.source, pkg: iptablesPkg.name }]
        : [],
    ),
  ];
  const libraries = resolveNeeded({
    roots,
    libDirs: [`/lib/${arch.multiarch}`, `/usr/lib/${arch.multiarch}`, "/lib", "/usr/lib"],
    lookup,
    expand,
    read: (f) => readElf(readFileSync(f.source), f.source),
  });

  const config = `${kernelPkg.root}/boot/config-${release}`;
  return {
    release,
    modulesDir,
    kernel: `${kernelPkg.root}/boot/vmlinuz-${release}`,
    kernelConfig: existsSync(config) ? readFileSync(config, "utf8") : "",
    busybox,
    applets,
    ip,
    iptables,
    libraries: libraries.map(({ path, source }) => ({ path, source })),
    packagesOf: (paths) => {
      const found = new Map<string, string>();
      for (const p of paths) {
        const pkg = cache.all().find((k) => p.startsWith(`${k.root}/`));
        if (pkg) found.set(p, `${pkg.name}:${arch.debianArch}`);
      }
      return found;
    },
  };
}

/**
 * The applet list of the foreign busybox, without running it: the host's
 * busybox-static of the same source version lists the same applets (one
 * Debian configuration for every architecture). Throws when they differ.
 */
function busyboxApplets(foreignVersion: string): string[] {
  const source = (v: string) => v.replace(/\+b\d+$/, "");
  const hostVersion = run("dpkg-query", ["-W", "-f=$" + "{Version}", "busybox-static"]).trim();
  if (source(hostVersion) !== source(foreignVersion)) {
    throw new Error(
      `busybox-static: the host's ${hostVersion} and the guest's ${foreignVersion} differ; their applets may too`,
    );
  }
  return run("busybox", ["--list-full"]).split("\n").filter(Boolean);
}
