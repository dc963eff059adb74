/**
 * Where a piece of `ip` work runs: an exchange with a resident session
 * (ip-session.ts; `ip -6` work with the IPv6 one) when there is one, it is
 * free and the work is small, else a one-shot process (ip-one-shot.ts).
 * Both answer with the same RunResult, so the reader of a result does not
 * know which ran it.
 */
import type { IpOneShot } from "./ip-one-shot";
import type { RunResult } from "./ip-resident";
import type { IpSession } from "./ip-session";

/**
 * The largest exchange the resident session takes, in lines, and the
 * largest route table it reads: iproute2 flushes its JSON every route and
 * a pipe hands each flush to the event loop on its own, so past this a
 * one-shot process writing to a file costs less (bench/README.md, design
 * figures).
 */
export const SESSION_MAX_LINES = 512;
const SESSION_MAX_ROUTES = 512;

/** The show line a session exchange of changes only ends with, to know when it is done. */
const SESSION_SENTINEL = "link show";

/**
 * The call's signal (when it aborts, the running ip is killed and the run
 * fails with its reason), and `details: false` to read without -details:
 * for listings that only need routes it is half the bytes and less of ip's
 * time. Without it iproute2 leaves out the values it takes as the defaults
 * (type unicast, table main, protocol boot, scope global, metric 0: ip/
 * iproute.c print_route), which parse-ip-json.ts reads back as the same
 * defaults, and links lose their kind. The resident session always runs
 * with -details (its listings are small).
 */
export interface IpWork {
  signal?: AbortSignal;
  details?: boolean;
  /** A one-shot process whatever the size: a part of a large batch, or its read of a large table. */
  oneShot?: boolean;
  /** As `ip -6`: lines whose family only the command line can give (IPv6 rules, nexthop objects). */
  ipv6?: boolean;
}

/** A change batch: `force` carries on past failures (always one-shot). */
export interface BatchWork extends IpWork {
  force?: boolean;
}

/** What an `ip -6` answers on a kernel without IPv6 (ipv6.disable=1). */
const NO_IPV6 = /Address family not supported/i;

export class IpDispatch {
  /** The last route table read had more than SESSION_MAX_ROUTES routes. */
  private largeTables = false;

  constructor(
    readonly oneShot: IpOneShot,
    readonly session?: IpSession,
    /** The `ip -6` session; dropped on a kernel without IPv6 (every exchange would fail). */
    private session6?: IpSession,
  ) {}

  /** Remembers whether the table just read is too large for the session. */
  noteRoutes<T extends unknown[]>(routes: T): T {
    this.largeTables = routes.length > SESSION_MAX_ROUTES;
    return routes;
  }

  /**
   * `lines`, the last `reads` of them show lines, as one
   * `ip -json [-details] -batch -`.
   */
  jsonBatch(lines: readonly string[], reads: number, work: IpWork = {}): Promise<RunResult> {
    const session = work.oneShot ? undefined : this.sessionFor(lines.length, work.ipv6);
    if (session) return this.exchange(session, lines, reads, work);
    const args = [...familyArgs(work), ...jsonArgs(work), "-batch", "-"];
    return this.oneShotBatch(args, lines, lines.length - reads, work);
  }

  /**
   * `lines` as one `ip -batch -` and then `reads` show lines (whose listings
   * need -json); `-force` batches always run one-shot.
   */
  changeBatch(
    lines: readonly string[],
    reads: readonly string[],
    work: BatchWork,
  ): Promise<RunResult> {
    const all = [...lines, ...reads];
    const session = work.force || work.oneShot ? undefined : this.sessionFor(all.length, work.ipv6);
    if (session) return this.exchange(session, all, reads.length, work);
    const args = work.force ? ["-force", "-batch", "-"] : ["-batch", "-"];
    args.unshift(...familyArgs(work));
    if (reads.length > 0) args.unshift(...jsonArgs(work));
    return this.oneShotBatch(args, all, lines.length, work);
  }

  /** `ip -json [-details] ARGS`: one process. */
  read(args: string[], work: IpWork = {}): Promise<RunResult> {
    return this.oneShot.run([...jsonArgs(work), ...args], undefined, work.signal);
  }

  /** The resident session (of the family), when there is one, it is free and `lines` are small work. */
  private sessionFor(lines: number, ipv6 = false): IpSession | undefined {
    const session = ipv6 ? this.session6 : this.session;
    if (session === undefined || session.busy || this.largeTables) return undefined;
    return lines > SESSION_MAX_LINES ? undefined : session;
  }

  /**
   * `lines` as an exchange with `session`; changes alone end with a show
   * line. Changes made through one session may rename links under the
   * other's name cache: the other checks its links before its next exchange.
   */
  private async exchange(
    session: IpSession,
    lines: readonly string[],
    reads: number,
    work: IpWork,
  ): Promise<RunResult> {
    const all = reads > 0 ? lines : [...lines, SESSION_SENTINEL];
    const r = await session.exchange(all, Math.max(reads, 1), {
      timeoutMs: this.oneShot.timeoutFor(all.length),
      ...(work.signal ? { signal: work.signal } : {}),
    });
    if (lines.length > reads) {
      for (const other of [this.session, this.session6]) if (other !== session) other?.distrust();
    }
    if (session === this.session6 && r.exitCode !== 0 && NO_IPV6.test(r.stderr)) {
      this.session6 = undefined;
      session.close();
    }
    return r;
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
    work: IpWork,
  ): Promise<RunResult> {
    const r = await this.oneShot.run(args, `${lines.join("\n")}\n`, work.signal);
    if (changes > 0) {
      this.session?.distrust();
      this.session6?.distrust();
    }
    return r;
  }
}

function familyArgs(work: IpWork): string[] {
  return work.ipv6 ? ["-6"] : [];
}

function jsonArgs(work: IpWork): string[] {
  return work.details === false ? ["-json"] : ["-json", "-details"];
}
