/**
 * Finds the packet-filter files on the build host for rootfs/iptables.ts:
 * Debian's xtables-nft-multi and the listed xtables extensions, telling
 * links (kept as links in the image) from files.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { IPTABLES_EXTENSIONS, type IptablesInputs, XTABLES_DIR, XTABLES_MULTI } from "./iptables";

/**
 * Throws naming the first file that is missing (the `iptables` package is
 * not installed). `imageDir`: where the extensions go in the image, when
 * `dir` is not that (an unpacked package of another architecture).
 */
export function probeIptables(
  dir = XTABLES_DIR,
  multi = XTABLES_MULTI,
  imageDir?: string,
): IptablesInputs {
  if (!existsSync(multi)) throw new Error(`${multi} missing: install the Debian package iptables`);
  const extensions = IPTABLES_EXTENSIONS.map((name) => {
    const path = `${dir}/${name}`;
    if (!existsSync(path)) throw new Error(`${path} missing: install the Debian package iptables`);
    if (lstatSync(path).isSymbolicLink()) {
      const target = readlinkSync(path);
      // Debian's links are relative, within the directory; anything else is copied whole.
      if (!target.includes("/")) return { name, linkTo: target };
    }
    return { name, source: realpathSync(path) };
  });
  return { multi: realpathSync(multi), extensions, ...(imageDir ? { dir: imageDir } : {}) };
}
