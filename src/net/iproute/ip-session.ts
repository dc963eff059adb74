/**
 * IpSession: one resident `ip -json -details -batch -` that the agent feeds
 * exchanges (change lines, then show lines, then a `# netagent exchange`
 * comment that iproute2 ignores but counts) instead of starting a process
 * per call. Starting ip (exec, libraries, netlink socket) costs more than
 * the few netlink messages of each of a pod sync's six runs (bench/README.md,
 * design figures).
 *
 * An exchange is answered by one newline-terminated JSON document per show
 * line (iproute2 prints each -json listing on one line and flushes it;
 * changes print nothing). Without -force, a failed line ends the process:
 * stdout reaches its end, stderr holds iproute2's words and `Command failed
 * -:M`, M counting every line the process has read, so the exchange's line
 * is M minus the lines sent before it. The next exchange starts a new
 * process. A timeout or a cancelled call kills the process (SIGKILL), as
 * for a one-shot run.
 *
 * iproute2 caches link names and indexes for the life of a process
 * (ip-name-cache.ts says when that cache can be wrong): a read that lists
 * the links first is judged by that listing afterwards, and read again in a
 * fresh process when the cache may be wrong; an exchange with changes is
 * preceded by a link check unless the exchange just before it listed the
 * links (the call's own read, moments before).
 */

import { NetError } from "../model/net-error";
import { renumberFailedLines, stoppedAtLine } from "../parse/ip-errors";
import { cancelled, killedAfter, Resident, type RunResult } from "./ip-resident";

export type { RunResult } from "./ip-resident";

/** The show lines that list links, whose documents the staleness check reads. */
const LISTS_LINKS = /^(addr|address|link) show$/;

/**
 * How long after a link listing a change may rely on it without a new
 * check: the listing that planned the change (the call's own read, moments
 * before), not one from an earlier call.
 */
const LISTING_TRUSTED_MS = 100;

/**
 * Standard error kept from earlier exchanges before it is dropped (UTF-16
 * units, about bytes): iproute2's warnings would otherwise pile up for the
 * life of the process. One exchange's own words are kept whole (at most
 * its lines' warnings: SESSION_MAX_LINES lines of iproute2's text).
 */
export const MAX_KEPT_STDERR = 64 * 1024;

/** How long the words of a process that ended are waited for after its output ended. */
const STDERR_GRACE_MS = 2000;

export interface ExchangeOptions {
  signal?: AbortSignal;
  /** Milliseconds before the process is killed. */
  timeoutMs: number;
}

export class IpSession {
  private resident: Resident | undefined;
  private running = false;
  /** Processes started so far (tests and the log count them). */
  started = 0;

  /**
   * `ipv6`: the process runs as `ip -6`, for the listings and changes whose
   * family only the command line can give (IPv6 rules, nexthop objects);
   * its link name cache is judged by `-6 link show`, which lists every link.
   */
  constructor(
    readonly binary: string,
    readonly ipv6 = false,
  ) {}

  /** An exchange is running: the caller should use a one-shot process instead. */
  get busy(): boolean {
    return this.running;
  }

  /** The resident process's PID, while there is one (tests, logs). */
  get pid(): number | undefined {
    return this.resident?.proc.pid;
  }

  /** Standard error held from the resident process (bounded by MAX_KEPT_STDERR; tests). */
  get stderrKept(): number {
    return this.resident?.err.length ?? 0;
  }

  /**
   * Runs `lines` (changes first, then `reads` show lines) as one exchange.
   * The result reads like a one-shot `ip -json -details -batch -` of the
   * same lines: documents joined by newlines, iproute2's stderr with the
   * failed line numbered from the exchange's first line.
   */
  async exchange(
    lines: readonly string[],
    reads: number,
    opts: ExchangeOptions,
  ): Promise<RunResult> {
    if (reads < 1) throw new RangeError("an exchange needs a show line to know when it is done");
    if (this.running) throw new Error("IpSession: one exchange at a time");
    this.running = true;
    try {
      const readOnly = lines.length === reads;
      const checkAfter = readOnly && LISTS_LINKS.test(lines[0] ?? "");
      let t = await this.trusted(checkAfter, opts);
      if (t.failed) return t.failed;
      const result = await this.run(t.resident, lines, reads, opts);
      // (A fresh process's first listing always agrees: its cache comes from it.)
      const stale = checkAfter && result.exitCode === 0 && !this.agrees(t.resident, result.docs[0]);
      // A read is run again, afresh, when the links moved since this process
      // last listed them (what it printed may name them from its stale
      // cache), or when the process died under it (not a failed line).
      const died =
        readOnly && !result.killed && result.exitCode !== 0 && !stoppedAtLine(result.stderr);
      if (stale || died) {
        this.retire();
        t = await this.trusted(false, opts);
        if (t.failed) return t.failed;
        return this.finish(
          t.resident,
          await this.run(t.resident, lines, reads, opts),
          lines,
          reads,
        );
      }
      return this.finish(t.resident, result, lines, reads);
    } finally {
      this.running = false;
    }
  }

  /**
   * Starts the resident process and takes its baseline listing now, in the
   * background, so the first call finds it ready (the agent, at start).
   */
  warm(timeoutMs = 10_000): void {
    if (this.running || this.resident) return;
    this.running = true;
    this.trusted(false, { timeoutMs })
      .catch(() => {})
      .finally(() => {
        this.running = false;
      });
  }

  /**
   * Something else (a one-shot restore) may have changed the links: the
   * next change is checked first, however recent the last listing.
   */
  distrust(): void {
    if (this.resident) this.resident.listedLast = false;
  }

  /** Ends the resident process (stdin closed: iproute2 exits by itself). */
  close(): void {
    this.resident?.close();
    this.resident = undefined;
  }

  /** A process whose name cache can be trusted for the next exchange. */
  private async trusted(
    checkAfter: boolean,
    opts: ExchangeOptions,
  ): Promise<{ resident: Resident; failed?: undefined } | { failed: RunResult }> {
    let resident = this.resident;
    if (resident && !resident.alive) resident = this.retire();
    const recent =
      resident?.listedLast === true && performance.now() - resident.listedAt < LISTING_TRUSTED_MS;
    if (resident && !checkAfter && !recent) {
      const check = await this.run(resident, ["link show"], 1, opts);
      if (check.killed) return { failed: check };
      // A failed check or moved links: a fresh process needs no check.
      if (check.exitCode !== 0 || !this.agrees(resident, check.docs[0])) resident = this.retire();
    }
    if (resident) return { resident };
    let fresh: Resident;
    try {
      fresh = new Resident(this.binary, this.ipv6);
    } catch (err) {
      // As a one-shot run says it: the call fails internal, naming the binary.
      const why = `cannot run ${this.binary}: ${(err as Error).message}`;
      const killed = new NetError("internal", why, { cause: err });
      return { failed: { stdout: "", stderr: "", exitCode: -1, killed } };
    }
    this.resident = fresh;
    this.started++;
    if (!checkAfter) {
      // The baseline later checks compare with, taken before any name is looked up.
      const base = await this.run(fresh, ["link show"], 1, opts);
      if (base.killed || base.exitCode !== 0) return { failed: base };
      this.agrees(fresh, base.docs[0]);
    }
    return { resident: fresh };
  }

  /**
   * Records a link listing the process printed; true when its name cache
   * is still right (ip-name-cache.ts). `own`: after its own link changes.
   */
  private agrees(resident: Resident, doc: string | undefined, own = false): boolean {
    resident.listedLast = true;
    resident.listedAt = performance.now();
    return resident.names.observe(doc ?? "", own);
  }

  private retire(): undefined {
    const r = this.resident;
    this.resident = undefined;
    if (r?.alive) r.kill(new NetError("unavailable", "retired"));
    return undefined;
  }

  /** One exchange on `resident`; a failure leaves it retired. */
  private async run(
    resident: Resident,
    lines: readonly string[],
    reads: number,
    opts: ExchangeOptions,
  ): Promise<RunResult & { docs: string[] }> {
    const { signal } = opts;
    if (signal?.aborted) {
      const killed = cancelled(signal, "not started");
      return { stdout: "", stderr: "", exitCode: -1, killed, docs: [] };
    }
    const base = resident.sent;
    // Only this exchange's words matter: warnings of earlier ones are not kept for ever.
    if (resident.err.length > MAX_KEPT_STDERR) resident.err = "";
    const errFrom = resident.err.length;
    const timer = setTimeout(() => resident.kill(killedAfter(opts.timeoutMs)), opts.timeoutMs);
    const onAbort = () => resident.kill(cancelled(signal as AbortSignal, "killed (SIGKILL)"));
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const docs = resident.write(lines) ? await resident.take(reads) : [];
      if (docs.length === reads && resident.killed === undefined) {
        resident.listedLast = false;
        return { stdout: docs.join("\n"), stderr: "", exitCode: 0, docs };
      }
      // The output ended before the exchange did: iproute2 stopped at a
      // failed line, or died, or was killed. Either way it is done with.
      if (this.resident === resident) this.resident = undefined;
      const killed = resident.killed;
      // Bounded by the timer: it kills a process that closed its output and lingers.
      const exit = await resident.proc.exited;
      if (killed) return { stdout: "", stderr: "", exitCode: exit.code, killed, docs: [] };
      await Promise.race([resident.errDone, Bun.sleep(STDERR_GRACE_MS)]);
      const words = renumberFailedLines(resident.err.slice(errFrom), (n) => n - base);
      const died = exit.signal
        ? `ip was killed by ${exit.signal} before it finished`
        : "ip ended before answering";
      return {
        stdout: docs.join("\n"),
        stderr: words.trim() ? words : died,
        exitCode: exit.code || 1,
        docs,
      };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * After an exchange: the links it listed after its last change are the
   * process's latest view; one that printed more than asked for leaves the
   * process retired (it and the agent no longer agree where answers begin).
   */
  private finish(
    resident: Resident,
    result: RunResult & { docs: string[] },
    lines: readonly string[],
    reads: number,
  ): RunResult {
    if (result.exitCode === 0) {
      const firstRead = lines.length - reads;
      let trusted = true;
      for (let i = lines.length - 1; i >= firstRead; i--) {
        if (LISTS_LINKS.test(lines[i] as string)) {
          trusted = this.agrees(resident, result.docs[i - firstRead], firstRead > 0);
          break;
        }
      }
      if (!trusted || resident.leftover) this.retire();
    }
    const { docs: _, ...rest } = result;
    return rest;
  }
}
