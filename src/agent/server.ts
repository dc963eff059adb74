/**
 * The agent's server: one ServerConnection per accepted channel, a cap on
 * connections, a stall timeout (a peer that leaves half a frame unfinished,
 * or stops reading its answers, is closed), and graceful shutdown (stop
 * accepting, let calls in flight finish within a grace period, close).
 */
import type { ByteChannel, ChannelSink, Listener } from "../transport/channel";
import { Code, codeName, TtrpcError } from "../ttrpc/codes";
import { ServerConnection } from "../ttrpc/server-connection";
import type { ServiceRegistry } from "../ttrpc/service";
import type { Logger } from "./log";

export interface AgentServerOptions {
  registry: ServiceRegistry;
  log: Logger;
  maxConnections: number;
  /**
   * Milliseconds a peer may keep a frame half-sent, or leave its answers
   * unread, before its connection is closed (default {@link DEFAULT_STALL_TIMEOUT_MS}).
   */
  stallTimeoutMs?: number;
}

/** Generous for a slow TCG guest; a live shim sends each frame in one write and always reads. */
export const DEFAULT_STALL_TIMEOUT_MS = 30_000;

/** What the stall sweep knows of one connection. */
interface Watch {
  channel: ByteChannel;
  /** When the frame now pending began arriving (no whole frame since). */
  partialSince: number | undefined;
  framesSeen: number;
  /** When answers started waiting unread (no progress since). */
  unreadSince: number | undefined;
  lastBuffered: number;
  /** Closed by the sweep; the transport has not reported it gone yet. */
  closing: boolean;
}

export class AgentServer {
  private readonly connections = new Map<ServerConnection, Watch>();
  private readonly listeners: Listener[] = [];
  private stopping = false;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private readonly stallTimeoutMs: number;

  constructor(private readonly options: AgentServerOptions) {
    this.stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** The acceptor to hand to a transport. */
  readonly accept = (channel: ByteChannel): ChannelSink | undefined => {
    const { log, maxConnections, registry } = this.options;
    if (this.stopping) return undefined;
    if (this.connections.size >= maxConnections) {
      log.warn("connection refused: limit reached", { peer: channel.peer, maxConnections });
      return undefined;
    }
    const conn = new ServerConnection({
      registry,
      write: (frame) => channel.write(frame),
      onCall: (info) => {
        const fields = { ...info, code: codeName(info.code), peer: channel.peer };
        if (info.code === 0) log.debug("call", fields);
        else log.info("call failed", fields);
      },
    });
    const watch: Watch = {
      channel,
      partialSince: undefined,
      framesSeen: 0,
      unreadSince: undefined,
      lastBuffered: 0,
      closing: false,
    };
    this.connections.set(conn, watch);
    this.startSweeper();
    log.debug("connection opened", { peer: channel.peer });
    return {
      receive: (chunk) => {
        conn.receive(chunk);
        // A slow-loris peer trickling one frame is still stalled: the clock
        // restarts only when a whole frame has arrived.
        if (conn.framesReceived !== watch.framesSeen) {
          watch.framesSeen = conn.framesReceived;
          watch.partialSince = conn.partialFrame ? performance.now() : undefined;
        } else if (conn.partialFrame) {
          watch.partialSince ??= performance.now();
        }
      },
      closed: () => {
        conn.close();
        this.connections.delete(conn);
        if (this.connections.size === 0) this.stopSweeper();
        log.debug("connection closed", { peer: channel.peer });
      },
    };
  };

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    const every = Math.max(10, Math.min(1000, Math.floor(this.stallTimeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    // Idle connections alone must not keep the process alive.
    this.sweeper.unref?.();
  }

  private stopSweeper(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Closes connections whose peer has stalled for longer than the stall timeout. */
  private sweep(): void {
    const now = performance.now();
    const limit = this.stallTimeoutMs;
    for (const [conn, w] of this.connections) {
      if (w.closing) continue;
      const buffered = w.channel.bufferedBytes ?? 0;
      // Progress is the peer taking bytes: the backlog shrank or emptied.
      if (buffered === 0 || buffered < w.lastBuffered) w.unreadSince = undefined;
      else w.unreadSince ??= now;
      w.lastBuffered = buffered;
      // While answers wait, reading is paused (back-pressure): a frame left
      // half-read then is our doing, so its clock waits too.
      if (buffered > 0 && w.partialSince !== undefined) w.partialSince = now;
      let reason: string | undefined;
      if (w.unreadSince !== undefined && now - w.unreadSince > limit) {
        reason = "answers left unread";
      } else if (
        w.partialSince !== undefined &&
        conn.partialFrame &&
        now - w.partialSince > limit
      ) {
        reason = "frame left unfinished";
      }
      if (reason === undefined) continue;
      this.options.log.warn("connection closed: peer stalled", {
        peer: w.channel.peer,
        reason,
        stallTimeoutMs: limit,
        bufferedBytes: buffered,
        activeCalls: conn.activeCalls,
      });
      // The transport reports `closed`, which forgets the connection.
      w.closing = true;
      w.channel.close();
    }
  }

  /** Resolves true once no connection has bytes waiting for its peer. */
  private async flushed(): Promise<boolean> {
    const waiting = () =>
      [...this.connections.values()].some((w) => (w.channel.bufferedBytes ?? 0) > 0);
    while (waiting()) await new Promise((r) => setTimeout(r, 10));
    return true;
  }

  addListener(listener: Listener): void {
    this.listeners.push(listener);
  }

  /**
   * Stops accepting and waits up to `graceMs` for calls in flight. Calls
   * still running then are cancelled (their signals abort, so waits such as
   * hot-plug give up) and get up to `settleMs` more: a network change that
   * is under way finishes or rolls back rather than being cut off by exit.
   * Then closes every connection. Resolves true when nothing was cut short.
   */
  async shutdown(graceMs: number, settleMs = 0): Promise<boolean> {
    this.stopping = true;
    await Promise.all(this.listeners.map((l) => l.close()));
    const drained = () =>
      Promise.all([...this.connections.keys()].map((c) => c.drain())).then(() => true);
    let clean = await within(drained(), graceMs);
    if (!clean && settleMs > 0) {
      const reason = new TtrpcError("agent shutting down", Code.UNAVAILABLE);
      for (const conn of this.connections.keys()) conn.cancel(reason);
      this.options.log.info("calls still running after the grace period: cancelled, settling", {
        graceMs,
        settleMs,
      });
      clean = await within(drained(), settleMs);
    }
    // Closing drops what the socket has not sent yet: let the answers out first.
    await within(this.flushed(), FLUSH_MS);
    this.stopSweeper();
    for (const { channel } of this.connections.values()) channel.close();
    return clean;
  }
}

/** How long shutdown lets answers already written reach their peers. */
const FLUSH_MS = 2000;

/** Resolves with `work`'s value, or false once `ms` have passed. */
async function within(work: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
