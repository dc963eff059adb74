/**
 * The image's sources from the build host itself (an x86_64 guest built on
 * x86_64): Debian's packages installed here when missing, the newest
 * kernel in /boot, libraries as ldd finds them, packages as dpkg -S says.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { probeIptables } from "./iptables-probe";
import { parseLdd } from "./ldd";
import { ensureHostPackages, run } from "./run";
import type { GuestSources } from "./sources";

const PACKAGES = [
  "busybox-static",
  "iproute2",
  "linux-image-amd64",
  "zstd",
  "lz4",
  "erofs-utils",
  "iptables",
];

/** The newest kernel with both an image in /boot and modules in /lib/modules. */
function findKernelRelease(): string {
  const releases = readdirSync("/lib/modules")
    .filter((r) => existsSync(`/boot/vmlinuz-${r}`) && existsSync(`/lib/modules/${r}/modules.dep`))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const newest = releases.at(-1);
  if (newest === undefined) throw new Error("no kernel in /boot with modules in /lib/modules");
  return newest;
}

/** Debian package of each path, asking dpkg once (merged /usr: try the /usr and real paths too). */
function packagesOf(paths: readonly string[]): Map<string, string> {
  const candidates = new Map<string, string>();
  for (const p of paths) {
    for (const c of [p, `/usr${p}`, p.replace(/^\/usr\//, "/"), realpath(p)])
      if (!candidates.has(c)) candidates.set(c, p);
  }
  const r = spawnSync("dpkg", ["-S", ...candidates.keys()], { encoding: "utf8" });
  const found = new Map<string, string>();
  for (const line of (r.stdout ?? "").split("\n")) {
    const m = /^([^:]+)(?::[a-z0-9]+)?: (\/.*)$/.exec(line);
    const owner = m && candidates.get(m[2] as string);
    if (m && owner && !found.has(owner)) found.set(owner, m[1] as string);
  }
  return found;
}

function realpath(p: string): string {
  try {
    return run("readlink", ["-f", p]).trim();
  } catch {
    return p;
  }
}

function which(cmd: string): string {
  return run("sh", ["-c", `command -v ${cmd}`]).trim();
}

/** The host's files for the image of `agent`; `release` picks a kernel other than the newest. */
export function hostSources(agent: string, release = ""): GuestSources {
  ensureHostPackages(PACKAGES);
  const kernelRelease = release || findKernelRelease();
  const busybox = which("busybox");
  const ip = realpath(which("ip"));
  const iptables = probeIptables();
  const extensionFiles = iptables.extensions.flatMap((e) => ("source" in e ? [e.source] : []));
  const libraries = [agent, ip, iptables.multi, ...extensionFiles].flatMap(
    (exe) => parseLdd(run("ldd", [exe])).paths,
  );
  const config = `/boot/config-${kernelRelease}`;
  return {
    release: kernelRelease,
    modulesDir: `/lib/modules/${kernelRelease}`,
    kernel: `/boot/vmlinuz-${kernelRelease}`,
    kernelConfig: existsSync(config) ? readFileSync(config, "utf8") : "",
    busybox,
    applets: run(busybox, ["--list-full"]).split("\n").filter(Boolean),
    ip,
    iptables,
    libraries: libraries.map((path) => ({ path, source: path })),
    packagesOf,
  };
}
