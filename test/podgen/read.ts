/**
 * A complete, independent read of one netns: everything `ip -d -j` prints
 * for links, addresses, routes of every table, rules, neighbours (every
 * state, and the proxy entries) and nexthop objects, both families, plus
 * every file under /proc/sys/net as seen from inside the netns. Nothing of
 * netagent is used; the comparison (compare.ts) works on these reads only.
 */
import { spawn } from "node:child_process";
import { run } from "../helpers/process";

export type Json = Record<string, unknown>;

export interface NetnsRead {
  links: Json[];
  /** `ip -d -j address show`: per link, its addr_info in the kernel's order. */
  addresses: Json[];
  /** Both families, every table; `family` and `locks` (metric names) added. */
  routes: Json[];
  rules: Json[];
  /** `nud all` and the proxy entries (`proxy: null`), `family` added. */
  neighbours: Json[];
  /** null when this kernel has no nexthop objects. */
  nexthops: Json[] | null;
  /** Path below /proc/sys/net ("ipv4/conf/eth0/rp_filter") to its content. */
  sysctls: Map<string, string>;
}

async function ip(ns: string, ...args: string[]): Promise<string> {
  const r = await run("ip", ["-n", ns, ...args]);
  if (r.code !== 0) throw new Error(`ip -n ${ns} ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * Several `show` commands through one `ip -d -j -batch -` (one process
 * instead of one each: the reads are most of a test's time on a busy
 * machine); each command prints one JSON array on one line.
 */
async function batch(ns: string, flags: string[], commands: string[]): Promise<Json[][]> {
  const r = await runWithInput(
    "ip",
    ["-n", ns, "-d", "-j", ...flags, "-batch", "-"],
    `${commands.join("\n")}\n`,
  );
  const lines = r.stdout.split("\n").filter((l) => l.trim() !== "");
  const what = `ip -n ${ns} ${flags.join(" ")} -batch (${commands.join("; ")})`;
  if (r.code !== 0) throw new Error(`${what}: ${r.stderr.trim() || `exit ${r.code}`}`);
  try {
    if (lines.length !== commands.length) throw new Error(`${lines.length} answers`);
    return lines.map((l) => JSON.parse(l) as Json[]);
  } catch (err) {
    // A dump the kernel's tables changed under ("Dump was interrupted") can come back cut short.
    throw new Inconsistent(`${what}: ${(err as Error).message} ${r.stderr.trim()}`);
  }
}

/** A read that raced a change in the netns: read again. */
class Inconsistent extends Error {}

function runWithInput(
  file: string,
  args: string[],
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(file, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    p.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    p.once("error", reject);
    p.once("close", (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(input);
  });
}

const withFamily = (family: string, list: Json[]) => list.map((x) => ({ family, ...x }));
const PER_FAMILY = ["rule show", "neigh show nud all", "neigh show proxy", "route show table all"];

export async function readNetns(ns: string): Promise<NetnsRead> {
  for (let attempt = 1; ; attempt++) {
    try {
      const read = await readOnce(ns);
      if (read) return read;
      if (attempt === 4)
        throw new Error(`ip -n ${ns} route: the text and JSON dumps keep disagreeing`);
    } catch (err) {
      if (!(err instanceof Inconsistent) || attempt === 4) throw err;
    }
  }
}

/** One read; undefined when the text and JSON route dumps disagree (read again). */
async function readOnce(ns: string): Promise<NetnsRead | undefined> {
  const [[links, addresses], v4, v6, text4, text6, nexthops, sysctls] = await Promise.all([
    batch(ns, [], ["link show", "address show"]) as Promise<[Json[], Json[]]>,
    batch(ns, ["-4"], PER_FAMILY),
    batch(ns, ["-6"], PER_FAMILY),
    ip(ns, "-d", "-4", "route", "show", "table", "all"),
    ip(ns, "-d", "-6", "route", "show", "table", "all"),
    readNexthops(ns),
    readSysctls(ns),
  ]);
  const [rules4, n4, p4, routes4] = v4 as [Json[], Json[], Json[], Json[]];
  const [rules6, n6, p6, routes6] = v6 as [Json[], Json[], Json[], Json[]];
  const r4 = withLocks("inet", routes4, text4);
  const r6 = withLocks("inet6", routes6, text6);
  if (!r4 || !r6) return undefined;
  return {
    links,
    addresses,
    routes: [...r4, ...r6],
    rules: [...withFamily("inet", rules4), ...withFamily("inet6", rules6)],
    neighbours: [...withFamily("inet", [...n4, ...p4]), ...withFamily("inet6", [...n6, ...p6])],
    nexthops,
    sysctls,
  };
}

/**
 * iproute2's JSON drops a metric's lock (`mtu lock 1400` prints as "mtu":
 * 1400; only the text says "lock"), so the text dump of the same routes is
 * read too and matched to the JSON entries by position (one text line per
 * route, its multipath hops on indented lines below it). Undefined when the
 * two disagree (something changed between the dumps): read again.
 */
function withLocks(family: string, list: Json[], text: string): Json[] | undefined {
  const lines = text.split("\n").filter((l) => l !== "" && !/^\s/.test(l));
  const same =
    lines.length === list.length &&
    lines.every((l, i) => l.split(" ").includes(String(list[i]?.dst)));
  return same
    ? list.map((r, i) => ({ family, ...r, locks: locksOf(lines[i] as string) }))
    : undefined;
}

const METRIC_WORDS = new Set([
  "mtu",
  "window",
  "rtt",
  "rttvar",
  "ssthresh",
  "cwnd",
  "advmss",
  "reordering",
  "hoplimit",
  "initcwnd",
  "features",
  "rto_min",
  "initrwnd",
  "quickack",
  "congctl",
  "fastopen_no_cookie",
]);

/** The metrics a text route line marks "NAME lock VALUE", by name. */
export function locksOf(line: string): string[] {
  const words = line.split(/\s+/);
  return words.filter((w, i) => METRIC_WORDS.has(w) && words[i + 1] === "lock").sort();
}

async function readNexthops(ns: string): Promise<Json[] | null> {
  const r = await run("ip", ["-n", ns, "-d", "-j", "nexthop", "show"]);
  if (r.code !== 0) {
    if (/not supported|Unknown|Invalid argument/i.test(r.stderr)) return null;
    throw new Error(`ip -n ${ns} nexthop show: ${r.stderr.trim()}`);
  }
  try {
    return JSON.parse(r.stdout || "[]") as Json[];
  } catch (err) {
    throw new Inconsistent(
      `ip -n ${ns} nexthop show: ${(err as Error).message} ${r.stderr.trim()}`,
    );
  }
}

/**
 * Every readable file under /proc/sys/net, read from inside the netns (the
 * files show the netns of the process that opens them). grep prints
 * "PATH:LINE" per line; a value of several lines is joined with newlines.
 */
async function readSysctls(ns: string): Promise<Map<string, string>> {
  const r = await run("ip", ["netns", "exec", ns, "grep", "-rs", "^", "/proc/sys/net"]);
  if (r.code !== 0 && r.code !== 2) throw new Error(`sysctls of ${ns}: ${r.stderr.trim()}`);
  const out = new Map<string, string>();
  for (const line of r.stdout.split("\n")) {
    const m = /^\/proc\/sys\/net\/([^:]+):(.*)$/.exec(line);
    if (!m) continue;
    const [, path, value] = m as unknown as [string, string, string];
    out.set(path, out.has(path) ? `${out.get(path)}\n${value}` : value);
  }
  return out;
}
