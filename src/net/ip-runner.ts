/**
 * IpRunner: the only place that spawns iproute2. Always without a shell:
 * reads with `ip -json -details`, writes a whole plan through one
 * `ip -batch -` process. Errors carry the failing command, iproute2's words
 * and a status code from the one table in ip-errors.ts.
 */
import { Code, TtrpcError } from "../ttrpc/codes";
import { classifyIpError, failedBatchLine, ipErrorText } from "./ip-errors";
import type { NetState, Route } from "./model";
import { parseLinks, parseNeighbors, parseRoutes, splitJsonDocuments } from "./parse-ip-json";

/** A failed batch: which line, what ip said, and the status it maps to. */
export class IpBatchError extends TtrpcError {
  constructor(
    readonly lineIndex: number | undefined,
    readonly line: string | undefined,
    readonly ipMessage: string,
    code: Code,
  ) {
    super(line ? `ip ${line}: ${ipMessage}` : `ip: ${ipMessage}`, code);
  }
}

interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export class IpRunner {
  /**
   * `binary` may be a stand-in for tests (the agent's `--ip-bin`; no
   * environment variable sets it: the guest's init environment comes from
   * the kernel command line).
   * `netns`, a name under /run/netns, makes every call `ip -n NAME ...`
   * (the host side reads pod namespaces this way; the agent uses its own);
   * a path (starting with "/", e.g. /proc/PID/ns/net) runs
   * `nsenter --net=PATH ip ...`, since iproute2 6.1's `-n` takes names only.
   */
  constructor(
    readonly binary = "ip",
    readonly netns?: string,
  ) {}

  private async run(args: string[], stdin?: string): Promise<RunResult> {
    let proc: ReturnType<typeof Bun.spawn>;
    try {
      const argv =
        this.netns === undefined
          ? [this.binary, ...args]
          : this.netns.startsWith("/")
            ? ["nsenter", `--net=${this.netns}`, "--", this.binary, ...args]
            : [this.binary, "-n", this.netns, ...args];
      proc = Bun.spawn(argv, {
        stdin: stdin === undefined ? "ignore" : Buffer.from(stdin),
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
      });
    } catch (err) {
      throw new TtrpcError(`cannot run ${this.binary}: ${(err as Error).message}`, Code.INTERNAL, {
        cause: err,
      });
    }
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(proc.stdout as ReadableStream).text(),
      new Response(proc.stderr as ReadableStream).text(),
      proc.exited,
    ]);
    // A process killed by a signal leaves no words of its own: say so.
    const died =
      proc.signalCode && !stderr.trim()
        ? `ip was killed by ${proc.signalCode} before it finished`
        : "";
    return { stdout, stderr: stderr || died, exitCode };
  }

  private async readJson(args: string[], stdin?: string): Promise<unknown[]> {
    const r = await this.run(["-json", "-details", ...args], stdin);
    if (r.exitCode !== 0) {
      const msg = ipErrorText(r.stderr);
      throw new TtrpcError(`ip ${args.join(" ")}: ${msg}`, classifyIpError(r.stderr));
    }
    try {
      return splitJsonDocuments(r.stdout);
    } catch (err) {
      throw new TtrpcError(`ip ${args.join(" ")}: unreadable output`, Code.INTERNAL, {
        cause: err,
      });
    }
  }

  /**
   * Links with addresses, main-table routes of both families, neighbours:
   * one process. (`route show table all` is the one listing that gives both
   * families; a table filter would make it IPv4 only.)
   */
  async readState(): Promise<NetState> {
    const docs = await this.readJson(
      ["-batch", "-"],
      "addr show\nroute show table all\nneigh show\n",
    );
    return {
      links: parseLinks(docs[0]),
      routes: parseRoutes(docs[1]),
      neighbors: parseNeighbors(docs[2]),
    };
  }

  /** Main-table routes of both families: one process. */
  async readRoutes(): Promise<Route[]> {
    const [doc] = await this.readJson(["route", "show", "table", "all"]);
    return parseRoutes(doc);
  }

  /**
   * Runs `lines` through one `ip -batch -`, stopping at the first failure.
   * `force` carries on past failures (used for best-effort restores).
   * Throws IpBatchError naming the failed line.
   */
  async batch(lines: readonly string[], options: { force?: boolean } = {}): Promise<void> {
    if (lines.length === 0) return;
    const args = options.force ? ["-force", "-batch", "-"] : ["-batch", "-"];
    const r = await this.run(args, `${lines.join("\n")}\n`);
    if (r.exitCode === 0) return;
    const index = failedBatchLine(r.stderr);
    // With -force several lines may fail: the code is the first failure's,
    // the line the error names (the table's row order must not pick another).
    const first = /^[\s\S]*?Command failed -:\d+/.exec(r.stderr)?.[0] ?? r.stderr;
    throw new IpBatchError(
      index,
      index === undefined ? undefined : lines[index],
      ipErrorText(r.stderr),
      classifyIpError(first),
    );
  }
}
