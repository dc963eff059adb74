/**
 * Every readable file under /proc/sys/net, as seen by this process (its
 * own network namespace), by path below /proc/sys/net: the sysctl part of
 * a complete read (netagent.v1.Network Read). Files that refuse reads
 * (stable_secret, write-only ones such as ipv4/route/flush) are left out,
 * as `grep -rs` leaves them out on the host's side. Bounded: at most
 * {@link SYSCTL_TREE_MAX_FILES} files, each value at most one page.
 */
import { readdirSync } from "node:fs";
import { readSmall } from "./sysctl-fs";
import { SYSCTL_ROOT } from "./sysctl-keys";

/** More files than this (a guest with ~380 links, ~130 files each) is refused rather than read on. */
export const SYSCTL_TREE_MAX_FILES = 50_000;

/** What the kernel prints in one sysctl file is under a page; more is not a sysctl. */
const MAX_VALUE_BYTES = 4096;

export class SysctlTreeTooLarge extends Error {}

/**
 * The files below `root`, path (relative, "/"-separated) to content with
 * its trailing newline dropped, in path order. Throws SysctlTreeTooLarge
 * past `maxFiles`.
 */
export function readSysctlTree(
  root = SYSCTL_ROOT,
  maxFiles = SYSCTL_TREE_MAX_FILES,
): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(rel === "" ? root : `${root}/${rel}`, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        walk(path);
        continue;
      }
      if (!e.isFile()) continue;
      let value: string | undefined;
      try {
        value = readSmall(`${root}/${path}`, MAX_VALUE_BYTES);
      } catch {
        continue;
      }
      // An empty file is left out, as grep (which prints no line for it) leaves it out.
      if (value === undefined || value === "") continue;
      if (out.size >= maxFiles) {
        throw new SysctlTreeTooLarge(`more than ${maxFiles} files under ${root}`);
      }
      out.set(path, value.replace(/\n$/, ""));
    }
  };
  walk("");
  return out;
}

/**
 * `grep -rs ^ /proc/sys/net` output ("PATH:LINE" per line) as the same
 * map: a value of several lines is joined with newlines, as the file holds
 * it. An empty file prints nothing and is left out (as readSysctlTree
 * leaves it out).
 */
export function parseSysctlGrep(text: string, root = SYSCTL_ROOT): Map<string, string> {
  const out = new Map<string, string>();
  const prefix = `${root}/`;
  for (const line of text.split("\n")) {
    if (!line.startsWith(prefix)) continue;
    const colon = line.indexOf(":", prefix.length);
    if (colon < 0) continue;
    const path = line.slice(prefix.length, colon);
    const value = line.slice(colon + 1);
    const had = out.get(path);
    out.set(path, had === undefined ? value : `${had}\n${value}`);
  }
  return out;
}
