/**
 * The seam between transports and the protocol: a transport hands each new
 * connection to an {@link Acceptor} as a {@link ByteChannel} and pushes the
 * bytes it reads into the returned {@link ChannelSink}.
 */

/** Where a connection's outgoing bytes go. */
export interface ByteChannel {
  /** Queues bytes for the peer; never throws (a dead peer surfaces as `closed`). */
  write(bytes: Uint8Array): void;
  /** Closes the connection; the sink's `closed` follows. */
  close(): void;
  /** A name for logs, e.g. the socket path or device. */
  readonly peer: string;
  /** The peer's vsock CID, on vsock connections where getpeername told it. */
  readonly peerCid?: number;
  /** Bytes written but not yet taken by the peer, where the transport knows it. */
  readonly bufferedBytes?: number;
  /**
   * Stops (true) or resumes (false) reading from the peer: the protocol's
   * back-pressure when its calls are at their cap. Independent of the
   * transport's own pause while written bytes wait for the peer.
   */
  setReadPaused?(paused: boolean): void;
}

/** What a transport calls for a connection it accepted. */
export interface ChannelSink {
  receive(chunk: Uint8Array): void;
  /** The connection is gone (peer hung up, or we closed it). Called once. */
  closed(): void;
  /** Everything written has been taken by the peer (after a backlog). */
  writable?(): void;
}

/** Given a new connection, returns its sink, or undefined to refuse it (it is closed). */
export type Acceptor = (channel: ByteChannel) => ChannelSink | undefined;

/** A running listener. */
export interface Listener {
  /** Human-readable address it listens on. */
  readonly address: string;
  /** Stops accepting; existing connections are left to the server. */
  close(): Promise<void>;
}
