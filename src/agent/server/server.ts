/**
 * The agent's server: one ServerConnection per accepted channel, a cap on
 * connections (at the cap, a connection idle past the idle timeout gives
 * way to a new one), a stall timeout (a peer that leaves half a frame
 * unfinished, or leaves its answers unread or reads them too slowly, is
 * closed: peer-watch.ts), and graceful shutdown (stop accepting, let calls
 * in flight finish within a grace period, close). In front mode each
 * connection has its own Forwarder (src/front) for the calls the registry
 * does not serve; it goes when its connection goes.
 */

import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  MAX_UNREAD_ANSWER_BYTES,
  MIN_ANSWER_READ_BYTES_PER_SEC,
  SHUTDOWN_FLUSH_MS,
} from "../../common/limits";
import type { Logger } from "../../common/log";
import { type AnswerHook, Forwarder, type UpstreamStartup } from "../../front/forwarder";
import type { UpstreamAddress } from "../../front/upstream-address";
import type { ByteChannel, ChannelSink, Listener } from "../../transport/channel";
import { Code, codeName, TtrpcError } from "../../ttrpc/codes";
import type { ForwardedCall } from "../../ttrpc/forward";
import { type CallInfo, ServerConnection } from "../../ttrpc/server-connection";
import type { ServiceRegistry } from "../../ttrpc/service";
import {
  isIdle,
  judgePeer,
  newWatch,
  noteReceived,
  type PeerLimits,
  type PeerWatch,
} from "./peer-watch";

export interface AgentServerOptions {
  registry: ServiceRegistry;
  log: Logger;
  maxConnections: number;
  /**
   * Milliseconds a peer may keep a frame half-sent, or leave its answers
   * unread, before its connection is closed (default {@link DEFAULT_STALL_TIMEOUT_MS}).
   */
  stallTimeoutMs?: number;
  /** Slowest answer reading tolerated while answers wait (bytes a second). */
  minReadBytesPerSec?: number;
  /** Idle this long, a connection gives way to a new one at the cap (ms). */
  idleTimeoutMs?: number;
  /** Calls one connection may run at once. */
  maxCallsPerConnection?: number;
  /** Front mode: calls the registry does not serve go to this upstream. */
  front?: {
    upstream: UpstreamAddress;
    onAnswer?: AnswerHook;
    onRequest?: (call: ForwardedCall) => void;
  };
  /** Told about every answered call (metrics). */
  onCall?: (info: CallInfo) => void;
}

export class AgentServer {
  private readonly connections = new Map<ServerConnection, PeerWatch>();
  private readonly forwarders = new Map<ServerConnection, Forwarder>();
  /** Front mode: whether any connection has reached the upstream yet. */
  private readonly startup: UpstreamStartup = { reached: false };
  /** Connections whose peer is gone while their calls' work goes on. */
  private readonly orphaned = new Set<ServerConnection>();
  private readonly listeners: Listener[] = [];
  private stopping = false;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private readonly limits: PeerLimits;
  private readonly idleTimeoutMs: number;

  constructor(private readonly options: AgentServerOptions) {
    this.limits = {
      stallTimeoutMs: options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
      minReadBytesPerSec: options.minReadBytesPerSec ?? MIN_ANSWER_READ_BYTES_PER_SEC,
    };
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** The acceptor to hand to a transport. */
  readonly accept = (channel: ByteChannel): ChannelSink | undefined => {
    const { log, maxConnections, registry } = this.options;
    if (this.stopping) return undefined;
    if (this.liveCount() >= maxConnections && !this.evictIdle(channel.peer)) {
      log.warn("connection refused: limit reached", { peer: channel.peer, maxConnections });
      return undefined;
    }
    const watch = newWatch(channel, performance.now());
    const logsCalls = log.level === "debug";
    const { front, onCall } = this.options;
    const forwarder =
      front === undefined
        ? undefined
        : new Forwarder({
            upstream: front.upstream,
            log,
            caller: channel.peer,
            callerBacklog: () => channel.bufferedBytes ?? 0,
            onUpstreamWritable: () => conn.writable(),
            startup: this.startup,
            ...(front.onAnswer ? { onAnswer: front.onAnswer } : {}),
            ...(front.onRequest ? { onRequest: front.onRequest } : {}),
          });
    const conn: ServerConnection = new ServerConnection({
      registry,
      write: (frame) => {
        watch.written += frame.length;
        channel.write(frame);
      },
      onBusy: (busy) => channel.setReadPaused?.(busy),
      canStart: () =>
        (channel.bufferedBytes ?? 0) <= MAX_UNREAD_ANSWER_BYTES && (forwarder?.canStart ?? true),
      ...(forwarder ? { forward: forwarder.forward } : {}),
      onCall: (info) => {
        onCall?.(info);
        // A line per OK call only at debug: below it, nothing is built for one.
        if (info.code === 0 && !logsCalls) return;
        const fields = { ...info, code: codeName(info.code), peer: channel.peer };
        if (info.code === 0) log.debug("call", fields);
        else log.info("call failed", fields);
      },
      ...(this.options.maxCallsPerConnection === undefined
        ? {}
        : { maxInFlight: this.options.maxCallsPerConnection }),
    });
    this.connections.set(conn, watch);
    if (forwarder) this.forwarders.set(conn, forwarder);
    this.startSweeper();
    log.debug("connection opened", { peer: channel.peer });
    return {
      receive: (chunk) => {
        conn.receive(chunk);
        noteReceived(watch, conn, performance.now());
      },
      writable: () => {
        conn.writable();
        forwarder?.callerWritable();
      },
      closed: () => {
        conn.close();
        // Closing its upstream connection is what cancels its forwarded calls there.
        forwarder?.close();
        this.forwarders.delete(conn);
        this.connections.delete(conn);
        // The peer is gone, its calls' work is not: a change being applied
        // or rolled back still holds shutdown until it has ended.
        if (conn.activeCalls > 0) {
          this.orphaned.add(conn);
          conn.drain().then(() => this.orphaned.delete(conn));
        }
        if (this.connections.size === 0) this.stopSweeper();
        log.debug("connection closed", { peer: channel.peer });
      },
    };
  };

  /** Connections not already being closed. */
  private liveCount(): number {
    let n = 0;
    for (const w of this.connections.values()) if (!w.closing) n++;
    return n;
  }

  /**
   * At the connection cap, closes the connection idle longest if it has
   * been idle at least the idle timeout, making room for `peer`: leaked
   * host clients cannot lock a shim out, and a shim's own connection is
   * never cut while there is room.
   */
  private evictIdle(peer: string): boolean {
    const now = performance.now();
    let oldest: PeerWatch | undefined;
    for (const [conn, w] of this.connections) {
      judgePeer(w, conn, now, this.limits); // brings lastActive up to date
      if (!isIdle(w, conn) || now - w.lastActive < this.idleTimeoutMs) continue;
      if (oldest === undefined || w.lastActive < oldest.lastActive) oldest = w;
    }
    if (oldest === undefined) return false;
    this.options.log.warn("connection closed: idle, room made for a new one", {
      peer: oldest.channel.peer,
      idleMs: Math.round(now - oldest.lastActive),
      idleTimeoutMs: this.idleTimeoutMs,
      for: peer,
    });
    oldest.closing = true;
    oldest.channel.close();
    return true;
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    const limit = this.limits.stallTimeoutMs;
    const every = Math.max(10, Math.min(1000, Math.floor(limit / 4)));
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
    for (const [conn, w] of this.connections) {
      if (w.closing) continue;
      // Backstop for a transport that never says it drained.
      conn.writable();
      const forwarder = this.forwarders.get(conn);
      forwarder?.callerWritable();
      forwarder?.judge(now, this.limits.stallTimeoutMs);
      const reason = judgePeer(w, conn, now, this.limits);
      if (reason === undefined) continue;
      this.options.log.warn("connection closed: peer stalled", {
        peer: w.channel.peer,
        reason,
        stallTimeoutMs: this.limits.stallTimeoutMs,
        bufferedBytes: w.channel.bufferedBytes ?? 0,
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
      Promise.all([...this.connections.keys(), ...this.orphaned].map((c) => c.drain())).then(
        () => true,
      );
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
    await within(this.flushed(), SHUTDOWN_FLUSH_MS);
    this.stopSweeper();
    for (const { channel } of this.connections.values()) channel.close();
    return clean;
  }
}

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
