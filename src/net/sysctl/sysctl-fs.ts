/**
 * SysctlFs: the only code that reads and writes /proc/sys/net. A process
 * sees its own network namespace's values there, so the agent reads and
 * writes the guest's. Keys are mapped to paths by sysctl-keys.ts alone.
 */
import { closeSync, existsSync, openSync, readdirSync, readSync, writeFileSync } from "node:fs";
import { NetError } from "../model/net-error";
import {
  isSysctlIface,
  isSysctlLeaf,
  NAMESPACED_KEYS,
  PER_INTERFACE,
  parseSysctlKey,
  SYSCTL_ROOT,
  sysctlPart,
} from "./sysctl-keys";

/** A write the kernel refused, with the key it was for. */
export class SysctlWriteError extends NetError {
  constructor(
    readonly key: string,
    kind: NetError["kind"],
    message: string,
    options?: { cause?: unknown },
  ) {
    super(kind, message, options);
  }
}

/** Paths remembered by key, at most this many (then forgotten all at once). */
const PATHS_KEPT = 4096;

export class SysctlFs {
  /**
   * Each key's path, as parsed last: a state's hundreds of keys are read
   * two or three times per Apply, and parsing each anew every time adds
   * a share of that read's cost.
   */
  private readonly paths = new Map<string, string>();

  /** `root` replaces /proc/sys/net for tests. */
  constructor(readonly root = SYSCTL_ROOT) {}

  private path(key: string): string {
    const known = this.paths.get(key);
    if (known !== undefined) return known;
    const k = parseSysctlKey(key);
    if (typeof k === "string") {
      throw new NetError("invalid", `sysctl ${key}: ${k}`);
    }
    const path = this.root + k.path.slice(SYSCTL_ROOT.length);
    if (this.paths.size >= PATHS_KEPT) this.paths.clear();
    this.paths.set(key, path);
    return path;
  }

  /** The values of `keys` that exist and can be read (some, e.g. stable_secret, refuse reads). */
  read(keys: Iterable<string>): Map<string, string> {
    const out = new Map<string, string>();
    for (const key of keys) {
      try {
        out.set(key, withoutNewline(readSmall(this.path(key))));
      } catch {
        // absent or unreadable: not part of the state
      }
    }
    return out;
  }

  /**
   * Whether the key exists here (a write-only key such as stable_secret
   * exists though a read fails): a guest's kernel may lack a key the pod's has.
   */
  exists(key: string): boolean {
    return existsSync(this.path(key));
  }

  /** Writes one value; the kernel's refusal (EINVAL, ENOENT, ...) becomes a SysctlWriteError naming the key. */
  write(key: string, value: string): void {
    try {
      writeFileSync(this.path(key), value);
    } catch (err) {
      if (err instanceof NetError) throw err;
      const e = err as NodeJS.ErrnoException;
      const why =
        e.code === "EINVAL"
          ? "the kernel refused the value (EINVAL)"
          : e.code === "ENOENT"
            ? "no such sysctl here (ENOENT)"
            : `${e.code ?? e.message}`;
      const kind = e.code === "EINVAL" ? "invalid" : e.code === "ENOENT" ? "not-found" : "internal";
      throw new SysctlWriteError(key, kind, `sysctl ${key}=${value}: ${why}`, { cause: err });
    }
  }

  /**
   * Every allowed key that can be read for these interfaces (with all and
   * default) and the namespaced ones, with its value: Get's read. Keys are
   * made from each directory's names as they are read, not parsed back
   * one by one (a guest of two links has about 500, read cold by a Get or
   * two in a pod's life).
   */
  readLinks(ifaces: readonly string[]): Map<string, string> {
    const out = this.read(NAMESPACED_KEYS);
    for (const { prefix, dir } of PER_INTERFACE) {
      for (const iface of ["all", "default", ...ifaces]) {
        if (!isSysctlIface(iface)) continue;
        const base = `${this.root}/${dir}/${iface}/`;
        let leaves: string[];
        try {
          leaves = readdirSync(base);
        } catch {
          continue;
        }
        const key = `${prefix}${sysctlPart(iface)}.`;
        for (const leaf of leaves.sort()) {
          if (!isSysctlLeaf(leaf)) continue;
          try {
            out.set(key + leaf, withoutNewline(readSmall(base + leaf)));
          } catch {
            // absent or unreadable: not part of the state
          }
        }
      }
    }
    return out;
  }
}

const withoutNewline = (s: string) => (s.endsWith("\n") ? s.slice(0, -1) : s);

/** One buffer for every read: a sysctl's value is a line or a few. */
const READ_BUFFER = Buffer.allocUnsafe(4096);

/**
 * A /proc/sys file's text: open, read until its end, close. A state holds
 * hundreds of keys, read twice per Apply, and a complete read every file
 * of /proc/sys/net; readFileSync costs 2-3 times as much per file for what
 * is one read of a few bytes (a tree of 573 files: 15 ms against 6, bun,
 * one core). A read that does not fill the buffer is the whole file:
 * /proc/sys formats the whole value at offset 0 (and a regular file gives
 * what it has), so no read of 0 bytes is asked for (one system call of
 * three per key). With `max`, undefined once the file holds more than
 * `max` bytes (nothing past it is decoded).
 */
export function readSmall(path: string): string;
export function readSmall(path: string, max: number): string | undefined;
export function readSmall(path: string, max = Number.POSITIVE_INFINITY): string | undefined {
  const fd = openSync(path, "r");
  try {
    const first = readSync(fd, READ_BUFFER, 0, READ_BUFFER.length, null);
    if (first === 0) return "";
    if (first < READ_BUFFER.length)
      return first > max ? undefined : READ_BUFFER.toString("utf8", 0, first);
    // Decoded once, whole: a character may span two reads.
    const parts = [Buffer.from(READ_BUFFER.subarray(0, first))];
    let total = first;
    for (;;) {
      const n = readSync(fd, READ_BUFFER, 0, READ_BUFFER.length, null);
      if (n === 0) return total > max ? undefined : Buffer.concat(parts).toString("utf8");
      total += n;
      if (total > max) return undefined;
      parts.push(Buffer.from(READ_BUFFER.subarray(0, n)));
    }
  } finally {
    closeSync(fd);
  }
}
