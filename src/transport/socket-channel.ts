/**
 * One accepted stream socket (Bun's native Socket) as a {@link ByteChannel}:
 * answers of one event-loop turn leave in one write, bytes the kernel did
 * not take wait in a {@link WriteQueue}, and reading pauses while they wait
 * (Go's blocking writes give the same back-pressure) or while the protocol
 * says it is busy. A refused connection is closed in order: EOF first.
 */
import type { Socket, SocketHandler } from "bun";
import type { ByteChannel, ChannelSink } from "./channel";
import { WriteQueue } from "./write-queue";

/**
 * A socket's events after `open`, for a socket whose data is its channel:
 * each is passed on to the channel. A handler that threw (`error`) leaves
 * the connection's state untrusted: it is closed.
 */
export const CHANNEL_EVENTS: Pick<
  SocketHandler<SocketChannel, "uint8array">,
  "data" | "drain" | "end" | "close" | "error"
> = {
  data: (socket, chunk) => socket.data.received(chunk),
  drain: (socket) => socket.data.drained(),
  end: (socket) => socket.data.ended(),
  close: (socket) => socket.data?.closed(),
  error: (socket) => socket.data?.close(),
};

/** How long a refused connection may take to hang up after our EOF. */
const REFUSED_LINGER_MS = 1000;

export class SocketChannel implements ByteChannel {
  private sink: ChannelSink | undefined;
  private readonly queue: WriteQueue;
  /** False once the peer ended or the socket closed: answers are dropped. */
  private open = true;
  private busy = false;
  private refused = false;
  private isClosed = false;

  constructor(
    private readonly socket: Socket<SocketChannel>,
    readonly peer: string,
    readonly peerCid?: number,
  ) {
    this.queue = new WriteQueue(
      (bytes) => socket.write(bytes),
      () => socket.pause(),
    );
  }

  get bufferedBytes(): number {
    return this.queue.bufferedBytes;
  }

  write(bytes: Uint8Array): void {
    if (this.open) this.queue.push(bytes);
  }

  setReadPaused(paused: boolean): void {
    this.busy = paused;
    if (paused) this.socket.pause();
    else if (!this.queue.blocked) this.socket.resume();
  }

  close(): void {
    this.open = false;
    this.queue.clear();
    this.socket.close();
  }

  /** Hands the channel to the acceptor's sink, or closes it in order when refused. */
  start(sink: ChannelSink | undefined): void {
    if (sink !== undefined) {
      this.sink = sink;
      return;
    }
    // Refused. Closing a socket whose peer already sent its first request
    // makes the peer see a reset; instead send EOF and drop what it sends
    // until it hangs up (`ended`), or until the linger runs out.
    this.refused = true;
    this.open = false;
    this.socket.shutdown();
    setTimeout(() => this.socket.close(), REFUSED_LINGER_MS).unref();
  }

  received(chunk: Uint8Array): void {
    if (!this.refused) this.sink?.receive(chunk);
  }

  /** The kernel takes bytes again: the rest goes out, then reading resumes. */
  drained(): void {
    if (!this.queue.drain()) return;
    if (!this.open) {
      this.socket.close();
      return;
    }
    if (!this.busy) this.socket.resume();
    this.sink?.writable?.();
  }

  /**
   * The peer sent EOF. As node:net did without half-open: answers already
   * queued still go out, later ones are dropped, then the socket closes.
   */
  ended(): void {
    this.open = false;
    this.queue.flush();
    if (this.refused || this.queue.bufferedBytes === 0) this.socket.close();
  }

  /** The socket is gone; the sink hears it once, after this turn (as with node:net). */
  closed(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.open = false;
    this.queue.clear();
    const sink = this.sink;
    if (sink !== undefined) setImmediate(() => sink.closed());
  }
}
