/**
 * IpRunner: what the agent and netagentctl ask of iproute2, one method
 * per question. Reads with `ip -json -details`, writes a whole plan
 * through one `ip -batch -`, a change and its read-back in one process.
 * Where each piece runs is ip-dispatch.ts's (the resident session or a
 * one-shot process, ip-one-shot.ts); what a result means is
 * ip-results.ts's. Every run is bounded in time ({@link IpLimits}) and
 * killed when the call that asked for it is cancelled.
 */
import { availableParallelism } from "node:os";
import type { FullState } from "../model/full-state";
import type { Link, NetState, Route } from "../model/model";
import { batchDocuments, readDocuments } from "../parse/ip-results";
import { parseLinks, parseNeighbors, parseRoutes } from "../parse/parse-ip-json";
import { parseNexthops } from "../parse/parse-ip-nexthops";
import type { BatchParts } from "../plan/plan-parallel";
import { parseRules } from "../plan/rules";
import { inWholeBatch, MAX_PARALLEL_IP, runBeforeAndTogether } from "./ip-batch-parts";
import { type BatchWork, IpDispatch, type IpWork } from "./ip-dispatch";
import { type IpLimits, IpOneShot } from "./ip-one-shot";
import type { RunResult } from "./ip-resident";
import { readFamily6, routesWithLocks } from "./ip-route-reads";
import type { IpSession } from "./ip-session";
import { someAwaitReady } from "./link-readiness";
import type { Semaphore } from "./semaphore";

/** The call's signal: when it aborts, the running ip is killed and the run fails with its reason. */
export interface IpRunOptions {
  signal?: AbortSignal;
}

export interface IpRunnerOptions {
  /**
   * The executable, default `ip`; may be a stand-in for tests (the agent's
   * `--ip-bin`; no environment variable sets it: the guest's init
   * environment comes from the kernel command line).
   */
  binary?: string;
  /**
   * Every call in this namespace: a name under /run/netns (`ip -n NAME`;
   * the host side reads pod namespaces this way, the agent uses its own)
   * or a path (e.g. /proc/PID/ns/net, entered with nsenter).
   */
  netns?: string;
  limits?: Readonly<IpLimits>;
  /** Bounds the `ip` processes running at once (the agent passes one; the host does not). */
  slots?: Semaphore;
  /** The resident ip for small batches and reads (the agent's; see ip-session.ts). */
  session?: IpSession;
  /** The resident `ip -6`, for the IPv6 ones (the agent's). */
  session6?: IpSession;
  /**
   * How many ip processes a batch in parts may run at once (default: the
   * CPUs this process may use, at most {@link MAX_PARALLEL_IP}); 1 runs
   * every batch in one process.
   */
  parallel?: number;
}

/**
 * The largest route table readLinksAndRoutes keeps (with its text) for the
 * next read to recognise (src/agent/services/routes-memo.ts keeps its answer): what
 * is held grows with the table (bench/README.md, design figures). A larger
 * table is parsed afresh each time.
 */
export const KEPT_TABLE_MAX_ROUTES = 20_000;

/**
 * The listings of a full read, in the order both full reads parse them:
 * links, routes of every table, neighbours, proxy entries, nexthop objects,
 * IPv4 rules (`rule show` last: it fixes the family for lines after it).
 */
const FULL_READ: readonly string[] = [
  "addr show",
  "route show table all",
  "neigh show",
  "neigh show proxy",
  "nexthop show",
  "rule show",
];

type LinksAndRoutes = { links: Omit<Link, "kind">[]; routes: Route[] };

export class IpRunner {
  private readonly oneShot: IpOneShot;
  private readonly dispatch: IpDispatch;
  private readonly parallel: number;
  /** readLinksAndRoutes' last text and what it was parsed into (one entry, a few MiB at most). */
  private lastLinksAndRoutes: { text: string; state: LinksAndRoutes } | undefined;

  constructor(options: IpRunnerOptions = {}) {
    this.oneShot = new IpOneShot(options);
    this.dispatch = new IpDispatch(this.oneShot, options.session, options.session6);
    this.parallel = Math.min(options.parallel ?? availableParallelism(), MAX_PARALLEL_IP);
  }

  /** How long a run fed `lines` lines may take before it is killed. */
  timeoutFor(lines: number): number {
    return this.oneShot.timeoutFor(lines);
  }

  /**
   * `ip ARGS` (fed `stdin`) as one process of this runner's (its binary,
   * namespace, slots and limits), its words handed back as iproute2 printed
   * them: the complete read's listings and the route lookups (ip-raw.ts).
   */
  runOnce(args: string[], opts: { stdin?: string; signal?: AbortSignal } = {}): Promise<RunResult> {
    return this.oneShot.run(args, opts.stdin, opts.signal);
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
      routes: this.dispatch.noteRoutes(parseRoutes(docs[1])),
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

  /**
   * Show lines as one `ip [-6] -json -details -batch -`, the output as
   * iproute2 printed it: the resident session's when it is free (the
   * complete read's family-less and IPv6 listings: ip-raw.ts), else a
   * process's.
   */
  async runListings(
    lines: readonly string[],
    opts: { signal?: AbortSignal; ipv6?: boolean } = {},
  ): Promise<RunResult> {
    return this.dispatch.jsonBatch(lines, lines.length, opts);
  }

  /** The links come without their kind (read without -details: see {@link IpWork}). */
  async readLinksAndRoutes(opts?: IpRunOptions): Promise<LinksAndRoutes> {
    const lines = ["addr show", "route show table all"];
    const r = await this.dispatch.jsonBatch(lines, lines.length, { ...opts, details: false });
    // The same text as last time is the same table: the same objects back
    // (routes-memo.ts knows a repeat by them), without parsing 10,000 routes again.
    const last = this.lastLinksAndRoutes;
    if (last !== undefined && r.exitCode === 0 && !r.killed && r.stdout === last.text) {
      return last.state;
    }
    const [links, routes] = readDocuments(lines.join("; "), r);
    const state = {
      links: parseLinks(links),
      routes: this.dispatch.noteRoutes(parseRoutes(routes)),
    };
    this.lastLinksAndRoutes =
      state.routes.length <= KEPT_TABLE_MAX_ROUTES ? { text: r.stdout, state } : undefined;
    return state;
  }

  async readLinksAndNeighbors(opts?: IpRunOptions): Promise<Pick<NetState, "links" | "neighbors">> {
    const [links, neighbors] = await this.readBatch(["addr show", "neigh show"], opts);
    return { links: parseLinks(links), neighbors: parseNeighbors(neighbors) };
  }

  /**
   * Links, routes of every table, rules of both families, neighbours,
   * nexthop objects: two processes at once (a batch cannot switch family,
   * and `rule show` lists IPv4 only unless `-6` is given; it goes last, as
   * it fixes the family for the lines after it; the IPv6 one also tells
   * which nexthop objects are IPv6), and a third for the text dump of the
   * routes when one has metrics (their locks: ip-route-reads.ts).
   */
  async readFullState(opts?: IpRunOptions): Promise<Omit<FullState, "sysctls">> {
    return (await this.readFullDocs(opts)).full;
  }

  /**
   * readFullState, and from the same listings what readState gives (its
   * listings are the full read's first three): a host that wants both
   * pays for one read. The main-table parse is made only here: the
   * agent's reads (readFullState) do not pay for it. `awaitingReady`: a
   * link of the read is up with carrier and not yet seen ready by the
   * kernel (link-ready.ts), so the read lacks what the kernel adds then.
   */
  async readFullAndState(
    opts?: IpRunOptions,
  ): Promise<{ full: Omit<FullState, "sysctls">; state: NetState; awaitingReady: boolean }> {
    const { docs, full } = await this.readFullDocs(opts);
    const state = {
      links: full.links,
      routes: parseRoutes(docs[1]),
      neighbors: parseNeighbors(docs[2]),
    };
    return { full, state, awaitingReady: someAwaitReady(docs[0]) };
  }

  /** The full read: its listings' documents and the state parsed from them. */
  private async readFullDocs(
    opts?: IpRunOptions,
  ): Promise<{ docs: unknown[]; full: Omit<FullState, "sysctls"> }> {
    const [docs, six] = await Promise.all([
      this.readBatch(FULL_READ, opts),
      readFamily6((lines) => this.dispatch.jsonBatch(lines, lines.length, { ...opts, ipv6: true })),
    ]);
    const routes = await routesWithLocks(this.oneShot, docs[1], opts?.signal);
    const full = {
      links: parseLinks(docs[0]),
      routes: this.dispatch.noteRoutes(routes),
      neighbors: [...parseNeighbors(docs[2]), ...parseNeighbors(docs[3])],
      nexthops: parseNexthops(docs[4], six.nexthops6),
      rules: [...parseRules(docs[5], 4), ...six.rules],
    };
    return { docs, full };
  }

  /**
   * Runs `lines` and then reads links, routes of every table, neighbours,
   * nexthop objects and IPv4 rules, in one `ip -json -batch -` (changes
   * print nothing there): a change and its read back for one process (and
   * the routes' text dump when one has metrics). Fails like {@link batch}.
   */
  async batchAndRead(
    lines: readonly string[],
    opts: IpRunOptions = {},
    parts?: BatchParts,
  ): Promise<Omit<FullState, "sysctls" | "rules"> & { rules4: FullState["rules"] }> {
    const reads = FULL_READ;
    let rest = lines;
    let work: IpWork = opts;
    // A batch in parts, on a machine with the CPUs: its middle at once, its
    // last part with the read back (`lines` is the parts in order).
    if (parts && this.parallel > 1 && parts.together.length > 1) {
      await runBeforeAndTogether(this.dispatch, parts, this.parallel, opts);
      rest = parts.after;
      work = { ...opts, oneShot: true };
    }
    const all = [...rest, ...reads];
    const r = await this.dispatch.jsonBatch(all, reads.length, work);
    // After parts, a refused line of the last one is named by its place in the whole batch.
    const offset = lines.length - rest.length;
    let documents: unknown[];
    try {
      documents = batchDocuments(r, all, "ip -batch");
    } catch (err) {
      throw offset === 0 ? err : inWholeBatch(err, (i) => i + offset);
    }
    const [links, routes, neighbors, proxies, nexthops, rules] = documents.slice(-reads.length);
    return {
      links: parseLinks(links),
      routes: this.dispatch.noteRoutes(await routesWithLocks(this.oneShot, routes, opts.signal)),
      neighbors: [...parseNeighbors(neighbors), ...parseNeighbors(proxies)],
      nexthops: parseNexthops(nexthops),
      rules4: parseRules(rules, 4),
    };
  }

  /** IPv6 rules only: one listing; none on a kernel without IPv6 (ipv6.disable=1). */
  async readRules6(opts?: IpRunOptions): Promise<FullState["rules"]> {
    const r = await this.dispatch.jsonBatch(["rule show"], 1, { ...opts, ipv6: true });
    if (!r.killed && r.exitCode !== 0 && /Address family not supported/i.test(r.stderr)) return [];
    const [doc] = readDocuments("-6 rule show", r);
    return parseRules(doc, 6);
  }

  /** Main-table routes of both families: one process. */
  async readRoutes(opts?: IpRunOptions): Promise<Route[]> {
    const args = ["route", "show", "table", "all"];
    const r = await this.dispatch.read(args, { ...opts, details: false });
    const [doc] = readDocuments(args.join(" "), r);
    return this.dispatch.noteRoutes(parseRoutes(doc));
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
    return this.dispatch.noteRoutes(parseRoutes(doc));
  }

  /** batch(), then the links with their addresses, read by the same process. */
  async batchThenLinks(lines: readonly string[], options: IpRunOptions = {}): Promise<Link[]> {
    const [doc] = await this.runBatch(lines, ["addr show"], options);
    return parseLinks(doc);
  }

  private async readBatch(lines: readonly string[], work?: IpWork): Promise<unknown[]> {
    const r = await this.dispatch.jsonBatch(lines, lines.length, work);
    return readDocuments(lines.join("; "), r);
  }

  private async runBatch(
    lines: readonly string[],
    reads: readonly string[],
    work: BatchWork,
  ): Promise<unknown[]> {
    const r = await this.dispatch.changeBatch(lines, reads, work);
    return batchDocuments(r, lines, reads.length === 0 ? undefined : `ip ${reads.join("; ")}`);
  }
}
