/**
 * Front mode's forwarding for one caller connection: every call the agent
 * does not serve goes to the upstream on this caller's own upstream
 * connection (made at its first forwarded call, made again after one is
 * lost), with the request's bytes as they came but for timeout_nano, which
 * says what is left of the caller's deadline. The upstream's answer comes
 * back unchanged. ttRPC has no cancel frame: a caller that goes away
 * cancels its forwarded calls by the front closing their upstream
 * connection (Go's and Rust's servers then cancel the handlers' contexts).
 * A single call given up (past its deadline and a grace, or cancelled) is
 * forgotten: its late answer is dropped.
 */
import {
  FORWARD_DEADLINE_GRACE_MS,
  MAX_UNSENT_FORWARD_BYTES,
  UPSTREAM_CONNECT_TIMEOUT_MS,
  UPSTREAM_RETRY_MS,
  UPSTREAM_START_MARGIN_MS,
  UPSTREAM_START_WAIT_MS,
} from "../common/limits";
import type { Logger } from "../common/log";
import { Code, TtrpcError } from "../ttrpc/codes";
import type { ForwardedAnswer, ForwardedCall } from "../ttrpc/forward";
import { peekStatus, withTimeout } from "./forward-envelope";
import type { UpstreamAddress } from "./upstream-address";
import { UpstreamConnectError, UpstreamLink } from "./upstream-link";

/** Whether this process has reached its upstream yet (shared by every caller's forwarder). */
export interface UpstreamStartup {
  reached: boolean;
}

/** Changes an OK answer on its way back (GetMetrics gets netagent's metrics appended). */
export type AnswerHook = (call: ForwardedCall, answer: ForwardedAnswer) => ForwardedAnswer;

export interface ForwarderOptions {
  upstream: UpstreamAddress;
  log: Logger;
  /** Names the caller's connection in logs. */
  caller: string;
  /** Answer bytes the caller has not taken yet. */
  callerBacklog: () => number;
  /** The upstream took what waited for it: held requests may start. */
  onUpstreamWritable: () => void;
  onAnswer?: AnswerHook;
  /** Shown each forwarded request before it goes (its bytes are a view: read them now). */
  onRequest?: (call: ForwardedCall) => void;
  /** Until it is reached, calls wait for the upstream to start (UPSTREAM_START_WAIT_MS). */
  startup: UpstreamStartup;
}

export class Forwarder {
  private link: UpstreamLink | undefined;
  private opening: Promise<UpstreamLink> | undefined;
  private closed = false;

  constructor(private readonly options: ForwarderOptions) {}

  /** False while bytes for the upstream wait past the bound: the caller's requests wait too. */
  get canStart(): boolean {
    return (this.link?.backlog ?? 0) <= MAX_UNSENT_FORWARD_BYTES;
  }

  /** The caller took answers: the upstream's may be read again. */
  callerWritable(): void {
    this.link?.callerWritable();
  }

  /** Closes an upstream link that has stopped taking bytes (see UpstreamLink.judge). */
  judge(now: number, stallTimeoutMs: number): void {
    if (this.link?.judge(now, stallTimeoutMs)) {
      this.options.log.warn("upstream connection closed: upstream stalled", {
        upstream: this.options.upstream.text,
        for: this.options.caller,
        stallTimeoutMs,
      });
    }
  }

  /** The caller is gone: its upstream connection closes, which cancels its calls there. */
  close(): void {
    this.closed = true;
    this.link?.close(new TtrpcError("caller connection closed", Code.CANCELLED));
    this.link = undefined;
  }

  /** Forwards one call (the server's Forward hook). */
  readonly forward = async (call: ForwardedCall): Promise<ForwardedAnswer> => {
    const { request, signal, started } = call;
    const upstream = this.options.upstream.text;
    const deadline =
      request.timeoutNano === 0n ? undefined : started + Number(request.timeoutNano) / 1e6;
    this.options.onRequest?.(call);
    const link = await this.connected(signal, deadline, started);
    let raw = call.raw;
    if (deadline !== undefined) {
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new TtrpcError(
          `deadline exceeded before the call reached upstream ${upstream}`,
          Code.DEADLINE_EXCEEDED,
        );
      }
      raw = withTimeout(raw, BigInt(Math.max(1, Math.round(left * 1e6))));
    }
    let streamId = 0;
    const answer = link.calls.send(raw, (id) => {
      streamId = id;
    });
    let response: Uint8Array;
    try {
      response = await giveUpOn(
        answer,
        signal,
        deadline,
        () =>
          new TtrpcError(
            `deadline exceeded: upstream ${upstream} did not answer in time`,
            Code.DEADLINE_EXCEEDED,
          ),
      );
    } catch (err) {
      // Given up (or the link failed): a late answer is dropped, the entry goes now.
      link.calls.forget(streamId);
      throw err;
    }
    const out: ForwardedAnswer = { response, ...peekStatus(response) };
    return out.code === Code.OK && this.options.onAnswer ? this.options.onAnswer(call, out) : out;
  };

  /**
   * The link, connecting first when there is none. Before the upstream has
   * been reached once, a connect that finds nothing listening (ENOENT,
   * ECONNREFUSED, ECONNRESET) is tried again until the start-up wait (or
   * the call's deadline) runs out; one that times out is not.
   */
  private async connected(
    signal: AbortSignal,
    deadline: number | undefined,
    started: number,
  ): Promise<UpstreamLink> {
    const until = Math.min(
      started + UPSTREAM_START_WAIT_MS,
      // Answered before the caller's own deadline, so it sees why.
      deadline === undefined ? Number.POSITIVE_INFINITY : deadline - UPSTREAM_START_MARGIN_MS,
    );
    for (;;) {
      try {
        return await this.connectOnce(signal, deadline);
      } catch (err) {
        const waiting =
          err instanceof UpstreamConnectError &&
          err.notListening &&
          !this.options.startup.reached &&
          performance.now() + UPSTREAM_RETRY_MS < until;
        if (!waiting) throw err;
        await pause(UPSTREAM_RETRY_MS, signal);
      }
    }
  }

  /** The link, connecting first when there is none; one connect at a time. */
  private async connectOnce(
    signal: AbortSignal,
    deadline: number | undefined,
  ): Promise<UpstreamLink> {
    if (this.closed) throw new TtrpcError("caller connection closed", Code.CANCELLED);
    if (this.link !== undefined && !this.link.closed) return this.link;
    this.opening ??= UpstreamLink.open(
      {
        upstream: this.options.upstream,
        log: this.options.log,
        caller: this.options.caller,
        callerBacklog: this.options.callerBacklog,
        onWritable: this.options.onUpstreamWritable,
        onClosed: (l) => {
          if (this.link === l) this.link = undefined;
        },
      },
      UPSTREAM_CONNECT_TIMEOUT_MS,
    ).then(
      (link) => {
        this.opening = undefined;
        this.options.startup.reached = true;
        // The caller left while this connected: nothing is to go through it.
        if (this.closed) link.close(new TtrpcError("caller connection closed", Code.CANCELLED));
        else this.link = link;
        return link;
      },
      (err) => {
        this.opening = undefined;
        throw err;
      },
    );
    const upstream = this.options.upstream.text;
    const link = await giveUpOn(
      this.opening,
      signal,
      deadline,
      () =>
        new TtrpcError(
          `deadline exceeded while connecting to upstream ${upstream}`,
          Code.DEADLINE_EXCEEDED,
        ),
    );
    if (link.closed) throw new TtrpcError("caller connection closed", Code.CANCELLED);
    return link;
  }
}

/** Resolves after `ms`, or rejects with the reason when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return giveUpOn(
    new Promise<void>((r) => setTimeout(r, ms)),
    signal,
    undefined,
    () => new Error("unreachable"),
  );
}

/**
 * `work`'s value, unless `signal` aborts first (rejects with its reason) or
 * `deadline` plus the grace passes (rejects with `expired()`).
 */
function giveUpOn<T>(
  work: Promise<T>,
  signal: AbortSignal,
  deadline: number | undefined,
  expired: () => Error,
): Promise<T> {
  if (signal.aborted) return Promise.reject(TtrpcError.from(signal.reason));
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      done();
      reject(TtrpcError.from(signal.reason));
    };
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    if (deadline !== undefined) {
      const wait = deadline + FORWARD_DEADLINE_GRACE_MS - performance.now();
      // A delay past 2^31-1 ms would fire at once: no timer then.
      if (wait <= 0x7fff_ffff) {
        timer = setTimeout(
          () => {
            done();
            reject(expired());
          },
          Math.max(0, wait),
        );
      }
    }
    work.then(
      (v) => {
        done();
        resolve(v);
      },
      (e) => {
        done();
        reject(e);
      },
    );
  });
}
