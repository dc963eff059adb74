/**
 * What the server watches of each connection's peer, and the pure rules
 * that judge it: a frame left half-sent, answers left unread or read too
 * slowly (stall), and how long the connection has been idle. The server's
 * sweep calls {@link judgePeer} once a tick; nothing here does I/O.
 */
import type { ByteChannel } from "../../transport/channel";
import type { ServerConnection } from "../../ttrpc/server-connection";

export interface PeerWatch {
  channel: ByteChannel;
  /** Bytes handed to the channel so far (taken = written - buffered). */
  written: number;
  /** When the frame now pending began arriving (no whole frame since). */
  partialSince: number | undefined;
  framesSeen: number;
  /** Start of the current window in which answers waited, and what had been taken then. */
  unreadSince: number | undefined;
  takenAtWindow: number;
  /** Last time the connection had anything going on (bytes in, a call, answers waiting). */
  lastActive: number;
  /** Closed by the server; the transport has not reported it gone yet. */
  closing: boolean;
}

export interface PeerLimits {
  stallTimeoutMs: number;
  minReadBytesPerSec: number;
}

export function newWatch(channel: ByteChannel, now: number): PeerWatch {
  return {
    channel,
    written: 0,
    partialSince: undefined,
    framesSeen: 0,
    unreadSince: undefined,
    takenAtWindow: 0,
    lastActive: now,
    closing: false,
  };
}

/** Notes bytes received: a whole frame restarts the half-sent clock, a part starts it. */
export function noteReceived(w: PeerWatch, conn: ServerConnection, now: number): void {
  w.lastActive = now;
  // A slow-loris peer trickling one frame is still stalled: the clock
  // restarts only when a whole frame has arrived.
  if (conn.framesReceived !== w.framesSeen) {
    w.framesSeen = conn.framesReceived;
    w.partialSince = conn.partialFrame ? now : undefined;
  } else if (conn.partialFrame) {
    w.partialSince ??= now;
  }
}

/**
 * Why the peer counts as stalled now, or undefined. Answers waiting: in
 * each window of the stall timeout the peer must take them all or at least
 * `minReadBytesPerSec` (a peer taking one byte a tick is stalled too).
 */
export function judgePeer(
  w: PeerWatch,
  conn: ServerConnection,
  now: number,
  limits: PeerLimits,
): string | undefined {
  const buffered = w.channel.bufferedBytes ?? 0;
  const taken = w.written - buffered;
  if (buffered > 0 || conn.activeCalls > 0 || conn.partialFrame) w.lastActive = now;
  let reason: string | undefined;
  if (buffered === 0) {
    w.unreadSince = undefined;
  } else if (w.unreadSince === undefined) {
    w.unreadSince = now;
    w.takenAtWindow = taken;
  } else if (now - w.unreadSince > limits.stallTimeoutMs) {
    const got = taken - w.takenAtWindow;
    const needed = (limits.minReadBytesPerSec * (now - w.unreadSince)) / 1000;
    if (got === 0) reason = "answers left unread";
    else if (got < needed) reason = "answers read too slowly";
    w.unreadSince = now;
    w.takenAtWindow = taken;
  }
  // While answers wait or calls are at their cap, reading is paused (our
  // back-pressure): a frame left half-read then is our doing, its clock waits.
  if ((buffered > 0 || conn.backlogged) && w.partialSince !== undefined) w.partialSince = now;
  if (
    reason === undefined &&
    w.partialSince !== undefined &&
    conn.partialFrame &&
    now - w.partialSince > limits.stallTimeoutMs
  ) {
    reason = "frame left unfinished";
  }
  return reason;
}

/** True when nothing is going on: no call, nothing half-sent, no answer unread. */
export function isIdle(w: PeerWatch, conn: ServerConnection): boolean {
  return (
    !w.closing &&
    conn.activeCalls === 0 &&
    !conn.partialFrame &&
    !conn.backlogged &&
    (w.channel.bufferedBytes ?? 0) === 0
  );
}
