/** Kernel settings the network handlers consult. */
import { readFileSync } from "node:fs";

/**
 * True when IPv6 is off for new and existing links (both `all` and
 * `default` disable_ipv6 are 1, or there is no IPv6 at all), as on
 * IPv4-only GKE nodes: adding an IPv6 address would then fail with EACCES.
 */
export function ipv6Disabled(root = "/proc/sys/net/ipv6/conf"): boolean {
  try {
    // Each /proc/sys read is a file opened, formatted by the kernel and
    // closed: the second only when it can matter (bench/README.md, design figures).
    if (readFileSync(`${root}/all/disable_ipv6`, "utf8").trim() !== "1") return false;
    return readFileSync(`${root}/default/disable_ipv6`, "utf8").trim() === "1";
  } catch {
    return true;
  }
}
