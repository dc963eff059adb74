/** Runs a build tool and returns its stdout; throws with its words on failure. */
import { spawnSync } from "node:child_process";

export function run(cmd: string, args: string[], input?: Uint8Array): string {
  const r = spawnSync(cmd, args, { input, encoding: "buffer", maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}: ${r.stderr.toString().trim()}`);
  }
  return r.stdout.toString();
}

/** Installs the Debian packages (of the host's architecture) that are missing. */
export function ensureHostPackages(packages: readonly string[]): void {
  const missing = packages.filter((p) => {
    const r = spawnSync("dpkg-query", ["-W", "-f=$" + "{Status}", p], { encoding: "utf8" });
    return !r.stdout?.includes("install ok installed");
  });
  if (missing.length === 0) return;
  console.log(`rootfs: installing ${missing.join(" ")}`);
  run("apt-get", ["update", "-qq"]);
  const r = spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (r.status !== 0) throw new Error(`apt-get install ${missing.join(" ")} failed`);
}
