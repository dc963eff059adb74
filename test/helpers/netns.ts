/**
 * Network namespaces the tests make and remove. Every `ip` call here names
 * its namespace (`ip -n NAME`), so the machine's own namespace is never
 * touched. The agent runs inside one through `ip netns exec`, which execs
 * it, so the PID we hold is the agent's.
 */
import { randomBytes } from "node:crypto";
import { type RunningAgent, startAgent } from "./agent";
import { run } from "./process";

export class Netns {
  private constructor(readonly name: string) {}

  /** Creates a fresh namespace with `lo` up. */
  static async create(prefix = "nt"): Promise<Netns> {
    const name = `${prefix}-${process.pid}-${randomBytes(3).toString("hex")}`;
    await ipOk(["netns", "add", name]);
    const ns = new Netns(name);
    await ns.ip("link", "set", "lo", "up");
    return ns;
  }

  /** Runs `ip -n NAME ...`; throws with stderr on failure. */
  async ip(...args: string[]): Promise<string> {
    return ipOk(["-n", this.name, ...args]);
  }

  /** Runs `ip -n NAME -json -details ...` and parses the output. */
  async json<T = Record<string, unknown>[]>(...args: string[]): Promise<T> {
    const out = await this.ip("-json", "-details", ...args);
    return JSON.parse(out || "[]") as T;
  }

  /**
   * The listings of `lines` (show lines), parsed, from one
   * `ip -n NAME -json -details -batch -`: one process for what would be
   * one per listing (a check repeated while something is being measured).
   */
  async listings(lines: readonly string[]): Promise<unknown[]> {
    const args = ["-n", this.name, "-json", "-details", "-batch", "-"];
    const r = await run("ip", args, 60_000, `${lines.join("\n")}\n`);
    if (r.code !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
    const docs = r.stdout.split("\n").filter((l) => l.trim() !== "");
    if (docs.length !== lines.length) {
      throw new Error(`ip -batch: ${docs.length} listings for ${lines.length} lines`);
    }
    return docs.map((d) => JSON.parse(d) as unknown);
  }

  /**
   * `dev` has a link-local address, none of its IPv6 addresses tentative,
   * and each link-local its `local` route: the kernel has finished changing
   * the link by itself after it came up (duplicate detection ended).
   */
  async linkLocalSettled(dev: string): Promise<boolean> {
    const links = await this.json<{ addr_info?: { local: string; tentative?: boolean }[] }[]>(
      "-6",
      "address",
      "show",
      "dev",
      dev,
    );
    const locals = await this.json<{ dst: string }[]>("-6", "route", "show", "table", "local");
    const addrs = links.flatMap((l) => l.addr_info ?? []);
    const linkLocal = addrs.filter((a) => a.local.startsWith("fe80:"));
    if (linkLocal.length === 0 || addrs.some((a) => a.tentative)) return false;
    const routed = new Set(locals.map((r) => r.dst));
    return linkLocal.every((a) => routed.has(a.local));
  }

  /** The raw text of `ip -json route` for both families: for byte-identical comparisons. */
  async routeDump(): Promise<string> {
    const v4 = await this.ip("-json", "-details", "route", "show", "table", "main");
    const v6 = await this.ip("-json", "-details", "-6", "route", "show", "table", "main");
    return `${v4}\n${v6}`;
  }

  /**
   * A veth pair: `name` in this namespace (with `mac` if given), `peer` here
   * or in `peerNs`. Both ends up unless `up` is false.
   */
  async veth(
    name: string,
    peer: string,
    opts: { mac?: string; up?: boolean; peerNs?: Netns } = {},
  ): Promise<void> {
    const where = opts.peerNs ? ["netns", opts.peerNs.name] : [];
    await this.ip("link", "add", name, "type", "veth", "peer", "name", peer, ...where);
    if (opts.mac) await this.ip("link", "set", name, "address", opts.mac);
    if (opts.up !== false) {
      await (opts.peerNs ?? this).ip("link", "set", peer, "up");
      await this.ip("link", "set", name, "up");
    }
  }

  /** Starts dist/netagent inside this namespace on a unix socket. */
  startAgent(extraArgs: readonly string[] = []): Promise<RunningAgent> {
    return startAgent({ args: extraArgs, netns: this });
  }

  async remove(): Promise<void> {
    await run("ip", ["netns", "del", this.name]);
  }
}

async function ipOk(args: string[]): Promise<string> {
  const r = await run("ip", args);
  if (r.code !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** A locally administered unicast MAC, random. */
export function randomMac(): string {
  const b = randomBytes(6);
  b[0] = ((b[0] as number) & 0xfe) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");
}
