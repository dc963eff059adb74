/**
 * What `--netns VALUE` names, decided once, so that the namespace checked
 * is the namespace read:
 * - a bare name (no slash) is /run/netns/NAME, read with `ip -n NAME`; it
 *   must match ^[A-Za-z0-9_.-]+$ and not be `.` or `..`;
 * - anything with a slash is a path (e.g. /proc/PID/ns/net, a bind mount,
 *   or relative to the current directory); it is made absolute here, and
 *   that absolute path is both checked and entered (nsenter --net=PATH).
 * Before this, a relative `a/b` was checked against the current directory
 * but read as /run/netns/a/b (`../../proc/1/ns/net` read PID 1's namespace).
 */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";

const NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * A `--netns` value to what IpRunner takes: a valid name with a file in
 * /run/netns, or an absolute path that exists. Returns a reason otherwise.
 */
export function resolveNetns(
  value: string,
  cwd = process.cwd(),
  runNetns = "/run/netns",
): string | { reason: string } {
  if (value.includes("\0")) return { reason: "NUL in the value" };
  if (value.includes("/")) {
    const path = resolve(cwd, value);
    try {
      statSync(path);
      return path;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { reason: `${path}: ${code === "ENOENT" ? "no such file" : code}` };
    }
  }
  if (!NAME.test(value) || value === "." || value === "..") {
    return {
      reason: `invalid name ${JSON.stringify(value)} (a name in ${runNetns} is letters, digits, "_", "." and "-"; a path has a "/")`,
    };
  }
  return existsSync(`${runNetns}/${value}`)
    ? value
    : { reason: `no network namespace named ${JSON.stringify(value)} in ${runNetns}` };
}
