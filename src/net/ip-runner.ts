/**
 * IpRunner: what the agent and netagentctl ask of iproute2, as one-shot
 * processes (started by src/process) or exchanges with the resident
 * session (ip-session.ts). Reads with `ip -json -details`, writes a whole
 * plan through one `ip -batch -`. Errors carry the failing command, iproute2's words
 * and a status code from the one table in ip-errors.ts. Every run is
 * bounded in time ({@link IpLimits}) and killed when the call that asked
 * for it is cancelled.
 */
import type { Command } from "../process/command";
import { runProcess } from "../process/run-process";
import type { FullState } from "./full-state";
import { classifyIpError, failedBatchLine, ipErrorText } from "./ip-errors";
import { dropOutput, outputPath, takeOutput } from "./ip-output";
import { cancelled, killedAfter, type RunResult } from "./ip-resident";
import type { IpSession } from "./ip-session";
import { splitJsonDocuments } from "./json-documents";
import type { Link, NetState, Route } from "./model";
import { NetError, type NetErrorKind } from "./net-error";
import { parseAllTableRoutes, parseLinks, parseNeighbors, parseRoutes } from "./parse-ip-json";
import { parseRules } from "./rules";
import type { Semaphore } from "./semaphore";

/**
 * A failed batch: which line, what ip said, and its kind. A killed batch
 * has no line; an aborted one keeps the signal's reason as its cause.
 */
export class IpBatchError extends NetError {
  constructor(
    readonly lineIndex: number | undefined,
    readonly line: string | undefined,
    readonly ipMessage: string,
    kind: NetErrorKind,
    options?: { cause?: unknown },
  ) {
    super(kind, line ? `ip ${line}: ${ipMessage}` : `ip: ${ipMessage}`, options);
  }

  /** The batch ip did not finish: killed at its limit, or by the caller's signal. */
  static killed(why: NetError): IpBatchError {
    return new IpBatchError(undefined, undefined, why.message, why.kind, { cause: why.cause });
  }
}

/**
 * How long one `ip` may run before it is killed (SIGKILL): `timeoutMs`, plus
 * `perLineMs` for each line it is fed. A wedged iproute2 (an rtnl lock that
 * never comes free) would otherwise hold the write queue for ever. 60 s
 * covers any read: a 100,000-route table reads in under 1 s on the dev
 * machine and a TCG guest is ~20x slower. 1 ms a line is ~20x what a batch
 * takes there (100,000 routes in 4.5 s), so the largest request a frame can
 * carry still finishes on a slow guest.
 */
export interface IpLimits {
  timeoutMs: number;
  perLineMs: number;
}

export const DEFAULT_IP_LIMITS: Readonly<IpLimits> = { timeoutMs: 60_000, perLineMs: 1 };

/** The call's signal: when it aborts, the running ip is killed and the run fails with its reason. */
export interface IpRunOptions {
  signal?: AbortSignal;
}

/**
 * The largest exchange the resident session takes, in lines, and the
 * largest route table it reads. iproute2 flushes its JSON every route, and
 * a pipe hands each flush to the event loop on its own (ip-output.ts).
 * Reading N routes (bun bench/profile/session-crossover.ts, load ~7 on 2
 * cores), one-shot vs session, wall / agent CPU in ms: 64: 6.8 / 0.9 vs
 * 1.2 / 0.7; 512: 9.7 / 1.1 vs 6.5 / 3.0; 2048: 13.7 / 1.4 vs 14.1 / 11.4.
 * At 512 the session still wins in time at ~3x the CPU; past it, large
 * work goes to a one-shot process writing to a file.
 */
export const SESSION_MAX_LINES = 512;

/**
 * The largest route table readLinksAndRoutes keeps (with its text) for the
 * next read to recognise (src/agent/routes-memo.ts keeps its answer): about
 * 10 MiB held at 20,000 routes. A larger table is parsed afresh each time.
 */
export const KEPT_TABLE_MAX_ROUTES = 20_000;
export const SESSION_MAX_ROUTES = 512;

/** The show line a session exchange of changes only ends with, to know when it is done. */
const SESSION_SENTINEL = "link show";

export class IpRunner {
  /** The last route table read had more than SESSION_MAX_ROUTES routes. */
  private largeTables = false;
  /** readLinksAndRoutes' last text and what it was parsed into (one entry, a few MiB at most). */
  private lastLinksAndRoutes:
    | { text: string; state: { links: Omit<Link, "kind">[]; routes: Route[] } }
    | undefined;

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
    readonly limits: Readonly<IpLimits> = DEFAULT_IP_LIMITS,
    /** Bounds the `ip` processes running at once (the agent passes one; the host does not). */
    readonly slots?: Semaphore,
    /** The resident ip for small batches and reads (the agent's; see ip-session.ts). */
    readonly session?: IpSession,
  ) {}

  /** How long a run fed `lines` lines may take before it is killed. */
  timeoutFor(lines: number): number {
    return this.limits.timeoutMs + this.limits.perLineMs * lines;
  }

  private run(args: string[], stdin?: string, opts: IpRunOptions = {}): Promise<RunResult> {
    return this.slots
      ? this.slots.run(() => this.spawn(args, stdin, opts))
      : this.spawn(args, stdin, opts);
  }

  private async spawn(args: string[], stdin?: string, opts: IpRunOptions = {}): Promise<RunResult> {
    const { signal } = opts;
    // Output to a file, not a pipe (ip-output.ts: a pipe costs ~10x the CPU).
    const outFile = outputPath();
    const r = await runProcess({
      ...this.command(args),
      ...(stdin === undefined ? {} : { stdin }),
      timeoutMs: this.timeoutFor(stdin === undefined ? 0 : countLines(stdin)),
      ...(signal ? { signal } : {}),
      ...(outFile === undefined ? {} : { stdoutFile: outFile }),
    });
    const { stop } = r;
    if (stop.kind !== "exited") {
      if (outFile !== undefined) dropOutput(outFile);
      switch (stop.kind) {
        case "not-started":
          throw new NetError("internal", `cannot run ${this.binary}: ${stop.error.message}`, {
            cause: stop.error,
          });
        case "aborted": {
          // Also when the call was cancelled while waiting for a process slot.
          const what = stop.started ? "killed (SIGKILL)" : "not started";
          return {
            stdout: "",
            stderr: "",
            exitCode: -1,
            killed: cancelled(signal as AbortSignal, what),
          };
        }
        case "timed-out":
          return { stdout: "", stderr: "", exitCode: -1, killed: killedAfter(stop.ms) };
        case "output-cap":
          throw new Error("ip runs have no output cap");
      }
    }
    const out =
      outFile === undefined ? new TextDecoder().decode(r.stdout) : await takeOutput(outFile);
    // A process killed by a signal leaves no words of its own: say so.
    const died =
      stop.signal && !r.stderr.trim() ? `ip was killed by ${stop.signal} before it finished` : "";
    return { stdout: out, stderr: r.stderr || died, exitCode: stop.code };
  }

  /**
   * `ip ARGS` in the runner's namespace: a name by iproute2's own `-n`
   * (no extra exec), a path through nsenter (iproute2 6.1's `-n` takes
   * names only).
   */
  private command(args: string[]): Command {
    const { netns } = this;
    if (netns === undefined) return { argv: [this.binary, ...args] };
    return netns.startsWith("/")
      ? { argv: [this.binary, ...args], netns }
      : { argv: [this.binary, "-n", netns, ...args] };
  }

  /** The resident session, when there is one, it is free and `lines` are small work. */
  private sessionFor(lines: number): IpSession | undefined {
    const session = this.session;
    if (session === undefined || session.busy || this.largeTables) return undefined;
    return lines > SESSION_MAX_LINES ? undefined : session;
  }

  /** `lines` as an exchange with `session`; changes alone end with a show line. */
  private exchange(
    session: IpSession,
    lines: readonly string[],
    reads: number,
    opts: IpRunOptions,
  ): Promise<RunResult> {
    const all = reads > 0 ? lines : [...lines, SESSION_SENTINEL];
    return session.exchange(all, Math.max(reads, 1), {
      timeoutMs: this.timeoutFor(all.length),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /**
   * Runs `lines`, the last `reads` of them show lines, as one
   * `ip -json -details -batch -`: an exchange with the resident session
   * when it can take it, else a process.
   */
  private jsonBatch(
    lines: readonly string[],
    reads: number,
    opts: IpRunOptions & Details = {},
  ): Promise<RunResult> {
    const session = this.sessionFor(lines.length);
    return session
      ? this.exchange(session, lines, reads, opts)
      : this.oneShotBatch([...jsonArgs(opts), "-batch", "-"], lines, lines.length - reads, opts);
  }

  /**
   * `lines` through a one-shot `ip ARGS` (the first `changes` of them change
   * something). Its changes (a restore may rename links) are not the
   * resident session's own: the session checks the links before its next.
   */
  private async oneShotBatch(
    args: string[],
    lines: readonly string[],
    changes: number,
    opts: IpRunOptions,
  ): Promise<RunResult> {
    const r = await this.run(args, `${lines.join("\n")}\n`, opts);
    if (changes > 0) this.session?.distrust();
    return r;
  }

  /** Remembers whether the table just read is too large for the session. */
  private noteRoutes<T extends unknown[]>(routes: T): T {
    this.largeTables = routes.length > SESSION_MAX_ROUTES;
    return routes;
  }

  private async readBatch(
    lines: readonly string[],
    opts?: IpRunOptions & Details,
  ): Promise<unknown[]> {
    return this.checkJson(lines.join("; "), await this.jsonBatch(lines, lines.length, opts));
  }

  private async readJson(
    args: string[],
    stdin?: string,
    opts: IpRunOptions & Details = {},
  ): Promise<unknown[]> {
    return this.checkJson(
      args.join(" "),
      await this.run([...jsonArgs(opts), ...args], stdin, opts),
    );
  }

  /** A read's documents, or its failure as a NetError naming `what`. */
  private checkJson(what: string, r: RunResult): unknown[] {
    if (r.killed) {
      throw new NetError(r.killed.kind, `ip ${what}: ${r.killed.message}`, {
        cause: r.killed.cause,
      });
    }
    if (r.exitCode !== 0) {
      const msg = ipErrorText(r.stderr);
      throw new NetError(classifyIpError(r.stderr), `ip ${what}: ${msg}`);
    }
    try {
      return splitJsonDocuments(r.stdout);
    } catch (err) {
      throw new NetError("internal", `ip ${what}: unreadable output`, {
        cause: err,
      });
    }
  }

  /**
   * Links with addresses, main-table routes of both families, neighbours:
   * one process. (`route show table all` is the one listing that gives both
   * families; a table filter would make it IPv4 only.)
   */
  async readState(opts?: IpRunOptions): Promise<NetState> {
    const docs = await this.readBatch(["addr show", "route show table all", "neigh show"], opts);
    return {
      links: parseLinks(docs[0]),
      routes: this.noteRoutes(parseRoutes(docs[1])),
      neighbors: parseNeighbors(docs[2]),
    };
  }

  /**
   * Only what a call needs, each listing one less to print and parse: the
   * links with their addresses, and the routes (as readState) or the
   * neighbours when asked for.
   */
  async readLinks(opts?: IpRunOptions): Promise<Pick<NetState, "links">> {
    const [links] = await this.readBatch(["addr show"], opts);
    return { links: parseLinks(links) };
  }

  /** The links come without their kind (read without -details: see {@link Details}). */
  async readLinksAndRoutes(
    opts?: IpRunOptions,
  ): Promise<{ links: Omit<Link, "kind">[]; routes: Route[] }> {
    const lines = ["addr show", "route show table all"];
    const r = await this.jsonBatch(lines, lines.length, { ...opts, details: false });
    // The same text as last time is the same table: the same objects back
    // (routes-memo.ts knows a repeat by them), without parsing 10,000 routes again.
    const last = this.lastLinksAndRoutes;
    if (last !== undefined && r.exitCode === 0 && !r.killed && r.stdout === last.text) {
      return last.state;
    }
    const [links, routes] = this.checkJson(lines.join("; "), r);
    const state = { links: parseLinks(links), routes: this.noteRoutes(parseRoutes(routes)) };
    this.lastLinksAndRoutes =
      state.routes.length <= KEPT_TABLE_MAX_ROUTES ? { text: r.stdout, state } : undefined;
    return state;
  }

  async readLinksAndNeighbors(opts?: IpRunOptions): Promise<Pick<NetState, "links" | "neighbors">> {
    const [links, neighbors] = await this.readBatch(["addr show", "neigh show"], opts);
    return { links: parseLinks(links), neighbors: parseNeighbors(neighbors) };
  }

  /**
   * Links, routes of every table, rules of both families, neighbours: two
   * processes at once (a batch cannot switch family, and `rule show` lists
   * IPv4 only unless `-6` is given; it goes last, as it fixes the family
   * for the lines after it).
   */
  async readFullState(opts?: IpRunOptions): Promise<Omit<FullState, "sysctls">> {
    const [docs, [rules6]] = await Promise.all([
      this.readBatch(["addr show", "route show table all", "neigh show", "rule show"], opts),
      // A kernel without IPv6 (ipv6.disable=1) has no IPv6 rules to list.
      this.readJson(["-6", "rule", "show"], undefined, opts).catch((err: Error) => {
        if (/Address family not supported/i.test(err.message)) return [[]];
        throw err;
      }),
    ]);
    return {
      links: parseLinks(docs[0]),
      routes: this.noteRoutes(parseAllTableRoutes(docs[1])),
      neighbors: parseNeighbors(docs[2]),
      rules: [...parseRules(docs[3], 4), ...parseRules(rules6, 6)],
    };
  }

  /**
   * Runs `lines` and then reads links, routes of every table, neighbours and
   * IPv4 rules, in one `ip -json -batch -` (changes print nothing there): a
   * change and its read back for one process. Fails like {@link batch}.
   */
  async batchAndRead(
    lines: readonly string[],
    opts: IpRunOptions = {},
  ): Promise<Omit<FullState, "sysctls" | "rules"> & { rules4: FullState["rules"] }> {
    const all = [...lines, "addr show", "route show table all", "neigh show", "rule show"];
    const r = await this.jsonBatch(all, 4, opts);
    if (r.killed) throw IpBatchError.killed(r.killed);
    if (r.exitCode !== 0) {
      const index = failedBatchLine(r.stderr);
      throw new IpBatchError(
        index,
        index === undefined ? undefined : all[index],
        ipErrorText(r.stderr),
        classifyIpError(r.stderr),
      );
    }
    let docs: unknown[];
    try {
      docs = splitJsonDocuments(r.stdout);
    } catch (err) {
      throw new NetError("internal", "ip -batch: unreadable output", { cause: err });
    }
    const [links, routes, neighbors, rules] = docs.slice(-4);
    return {
      links: parseLinks(links),
      routes: this.noteRoutes(parseAllTableRoutes(routes)),
      neighbors: parseNeighbors(neighbors),
      rules4: parseRules(rules, 4),
    };
  }

  /** IPv6 rules only: one process. */
  async readRules6(opts?: IpRunOptions): Promise<FullState["rules"]> {
    const [doc] = await this.readJson(["-6", "rule", "show"], undefined, opts).catch(
      (err: Error) => {
        if (/Address family not supported/i.test(err.message)) return [[]];
        throw err;
      },
    );
    return parseRules(doc, 6);
  }

  /** Main-table routes of both families: one process. */
  async readRoutes(opts?: IpRunOptions): Promise<Route[]> {
    const [doc] = await this.readJson(["route", "show", "table", "all"], undefined, {
      ...opts,
      details: false,
    });
    return this.noteRoutes(parseRoutes(doc));
  }

  /**
   * Runs `lines` through one `ip -batch -`, stopping at the first failure.
   * `force` carries on past failures (used for best-effort restores).
   * Throws IpBatchError naming the failed line; one without a line when ip
   * was killed (at its time limit: unavailable; by the signal: aborted),
   * after which any prefix of the lines may have been applied.
   */
  async batch(
    lines: readonly string[],
    options: { force?: boolean; ipv6?: boolean } & IpRunOptions = {},
  ): Promise<void> {
    if (lines.length === 0) return;
    await this.runBatch(lines, [], options);
  }

  /**
   * batch(), then the main table of both families read by the same process
   * (`-json` writes print nothing): a change and its read-back in one spawn.
   */
  async batchThenRoutes(lines: readonly string[], options: IpRunOptions = {}): Promise<Route[]> {
    const [doc] = await this.runBatch(lines, ["route show table all"], {
      ...options,
      details: false,
    });
    return this.noteRoutes(parseRoutes(doc));
  }

  /** batch(), then the links with their addresses, read by the same process. */
  async batchThenLinks(lines: readonly string[], options: IpRunOptions = {}): Promise<Link[]> {
    const [doc] = await this.runBatch(lines, ["addr show"], options);
    return parseLinks(doc);
  }

  private async runBatch(
    lines: readonly string[],
    reads: readonly string[],
    options: { force?: boolean; ipv6?: boolean } & IpRunOptions & Details,
  ): Promise<unknown[]> {
    const all = [...lines, ...reads];
    const session = options.force || options.ipv6 ? undefined : this.sessionFor(all.length);
    let r: RunResult;
    if (session) {
      r = await this.exchange(session, all, reads.length, options);
    } else {
      const args = options.force ? ["-force", "-batch", "-"] : ["-batch", "-"];
      // `-6`: lines whose family only the command line can give (IPv6 rules without a prefix).
      if (options.ipv6) args.unshift("-6");
      if (reads.length > 0) args.unshift(...jsonArgs(options));
      r = await this.oneShotBatch(args, all, lines.length, options);
    }
    if (r.killed) throw IpBatchError.killed(r.killed);
    if (r.exitCode === 0) {
      if (reads.length === 0) return [];
      try {
        return splitJsonDocuments(r.stdout);
      } catch (err) {
        throw new NetError("internal", `ip ${reads.join("; ")}: unreadable output`, {
          cause: err,
        });
      }
    }
    const index = failedBatchLine(r.stderr);
    // With -force several lines may fail: the code is the first failure's,
    // the line the error names (the table's row order must not pick another).
    const first = /^[\s\S]*?Command failed -:\d+/.exec(r.stderr)?.[0] ?? r.stderr;
    // A failed read-back line is past the change: no line of the plan to name.
    const line = index === undefined || index >= lines.length ? undefined : lines[index];
    throw new IpBatchError(
      line === undefined ? undefined : index,
      line,
      ipErrorText(r.stderr),
      classifyIpError(first),
    );
  }
}

/**
 * `details: false` reads without -details, for listings that only need
 * routes: a 10,000-route table is half the bytes and ~10 ms less of ip's
 * time. Without it iproute2 leaves out the values it takes as the defaults
 * (type unicast, table main, protocol boot, scope global, metric 0: ip/
 * iproute.c print_route), which parse-ip-json.ts reads back as the same
 * defaults, and links lose their kind. The resident session always runs
 * with -details (its listings are small).
 */
interface Details {
  details?: boolean;
}

function jsonArgs(opts: Details): string[] {
  return opts.details === false ? ["-json"] : ["-json", "-details"];
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}
