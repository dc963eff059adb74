/**
 * One connection to the upstream, made for one caller connection: the
 * socket (a ByteChannel) with its forwarded calls (a ttrpc ClientConnection), and
 * the two bounds on what it can make the front hold. Answers are read
 * from the upstream only while the caller takes its answers (the caller's
 * unread bytes at most {@link MAX_UNREAD_ANSWER_BYTES}): a caller that does
 * not read cannot make the front buffer the upstream's answers. Bytes for
 * the upstream that it does not take count as the link's backlog, which
 * holds the caller's next requests back (see Forwarder.canStart), and a
 * backlog that does not shrink for the stall timeout closes the link.
 */
import { MAX_UNREAD_ANSWER_BYTES } from "../common/limits";
import type { Logger } from "../common/log";
import type { ByteChannel } from "../transport/channel";
import { connectChannel } from "../transport/connect";
import { ClientConnection } from "../ttrpc/client-connection";
import { Code, TtrpcError } from "../ttrpc/codes";
import type { UpstreamAddress } from "./upstream-address";

/** The upstream could not be connected to (as opposed to a link lost later). */
export class UpstreamConnectError extends TtrpcError {
  /** The errno name, when the system gave one. */
  errno?: string;

  /** True when nothing listens there (yet): the socket is missing, refused or reset. */
  get notListening(): boolean {
    return this.errno === "ENOENT" || this.errno === "ECONNREFUSED" || this.errno === "ECONNRESET";
  }
}

export interface UpstreamLinkOptions {
  upstream: UpstreamAddress;
  log: Logger;
  /** Answer bytes the caller has not taken yet. */
  callerBacklog: () => number;
  /** The upstream took what was waiting for it: held requests may start. */
  onWritable: () => void;
  /** Told once when the link is gone. */
  onClosed: (link: UpstreamLink) => void;
  /** Names the caller's connection in logs. */
  caller: string;
}

export class UpstreamLink {
  readonly calls: ClientConnection;
  private channel: ByteChannel | undefined;
  private paused = false;
  private gone = false;
  /** Backlog at the last judgement, and when it last shrank. */
  private lastBacklog = 0;
  private progressAt = performance.now();

  private constructor(private readonly options: UpstreamLinkOptions) {
    this.calls = new ClientConnection((frame) => this.channel?.write(frame), {
      peer: `upstream ${options.upstream.text}`,
      closeWhenIdsRunOut: true,
    });
  }

  /** Connects; rejects UNAVAILABLE naming the upstream and why. */
  static async open(options: UpstreamLinkOptions, timeoutMs: number): Promise<UpstreamLink> {
    const link = new UpstreamLink(options);
    const { upstream } = options;
    try {
      link.channel = await connectChannel(upstream.address, {
        peer: `upstream ${upstream.text}`,
        timeoutMs,
        sink: {
          receive: (chunk) => link.received(chunk),
          writable: () => link.options.onWritable(),
          closed: () =>
            link.ended(
              new TtrpcError(`upstream ${upstream.text}: connection closed`, Code.UNAVAILABLE),
            ),
        },
      });
    } catch (err) {
      // The errno name says it (ENOENT, ECONNREFUSED, ETIMEDOUT); Bun's text adds nothing.
      const e = err as NodeJS.ErrnoException;
      const why = typeof e.code === "string" ? e.code : (e.message ?? String(err));
      link.gone = true;
      const failure = new UpstreamConnectError(
        `upstream ${upstream.text}: connect: ${why}`,
        Code.UNAVAILABLE,
        { cause: err },
      );
      if (typeof e.code === "string") failure.errno = e.code;
      throw failure;
    }
    options.log.debug("upstream connected", { upstream: upstream.text, for: options.caller });
    return link;
  }

  get closed(): boolean {
    return this.gone;
  }

  /** Bytes written for the upstream and not yet taken by it. */
  get backlog(): number {
    return this.channel?.bufferedBytes ?? 0;
  }

  /** The caller took answers: reading from the upstream may resume. */
  callerWritable(): void {
    if (this.paused && this.options.callerBacklog() <= MAX_UNREAD_ANSWER_BYTES) {
      this.paused = false;
      this.channel?.setReadPaused?.(false);
    }
  }

  /**
   * Closes the link when its backlog has not shrunk for `stallTimeoutMs`
   * (an upstream that stopped reading); returns true when it did.
   */
  judge(now: number, stallTimeoutMs: number): boolean {
    const backlog = this.backlog;
    if (backlog === 0 || backlog < this.lastBacklog) this.progressAt = now;
    this.lastBacklog = backlog;
    if (backlog === 0 || now - this.progressAt < stallTimeoutMs) return false;
    this.close(
      new TtrpcError(
        `upstream ${this.options.upstream.text}: stalled (${backlog} bytes not taken for ${Math.round(now - this.progressAt)} ms)`,
        Code.UNAVAILABLE,
      ),
    );
    return true;
  }

  /** Fails the link's calls with `reason` and closes the socket (the upstream cancels their work). */
  close(reason: TtrpcError): void {
    this.ended(reason);
    this.channel?.close();
  }

  private received(chunk: Uint8Array): void {
    if (!this.paused && this.options.callerBacklog() > MAX_UNREAD_ANSWER_BYTES) {
      this.paused = true;
      this.channel?.setReadPaused?.(true);
    }
    this.calls.receive(chunk);
  }

  private ended(reason: TtrpcError): void {
    if (this.gone) return;
    this.gone = true;
    const active = this.calls.activeCalls;
    this.calls.close(reason);
    this.options.log.debug("upstream connection closed", {
      upstream: this.options.upstream.text,
      for: this.options.caller,
      reason: reason.message,
      activeCalls: active,
    });
    this.options.onClosed(this);
  }
}
