/**
 * Outgoing stream connections on Bun's native sockets, as the same
 * {@link ByteChannel} an accepted connection is (socket-channel.ts): for
 * the agent's own calls to another ttRPC server (front mode's upstream).
 * The addresses as reach.ts reaches them (`unix:///path` through
 * Bun.connect, `vsock://CID:PORT` adopted by fd); no hybrid vsock, which
 * only a host dials. Native sockets, not node:net: the agent's accepted
 * connections are native too, a forwarded call then crosses no node:net
 * stream layer, and an agent that never dials does not load node:net at
 * its start (bench/README.md, the agent's executable under TCG).
 */
import type { Socket, SocketHandler } from "bun";
import type { AgentAddress } from "./address";
import type { ByteChannel, ChannelSink } from "./channel";
import { reach, type SocketKind } from "./reach";
import { CHANNEL_EVENTS, SocketChannel } from "./socket-channel";

export type DialAddress = Extract<AgentAddress, { kind: "unix" } | { kind: "vsock" }>;

export interface ConnectOptions {
  /** A name for logs. */
  peer: string;
  /** Gets the channel's bytes and its end. */
  sink: ChannelSink;
  /** Gives up (rejects with code ETIMEDOUT) after this long. */
  timeoutMs: number;
}

function handlers(
  peer: string,
  sink: ChannelSink,
  opened: (channel: SocketChannel) => void,
): SocketHandler<SocketChannel, "uint8array"> {
  return {
    binaryType: "uint8array",
    open(socket) {
      const channel = new SocketChannel(socket, peer);
      socket.data = channel;
      channel.start(sink);
      opened(channel);
    },
    ...CHANNEL_EVENTS,
  };
}

type ConnectFn = (options: {
  unix?: string;
  fd?: number;
  allowHalfOpen: boolean;
  socket: SocketHandler<SocketChannel, "uint8array">;
}) => Promise<Socket<SocketChannel>>;

/**
 * Connects to `address`; resolves with the channel once connected (its
 * sink then hears every byte and, once, the end). Rejects with an Error
 * whose `code` is the errno name (ENOENT, ECONNREFUSED, ETIMEDOUT, ...).
 */
export function connectChannel(
  address: DialAddress,
  options: ConnectOptions,
): Promise<ByteChannel> {
  return reach(address, nativeSockets(options), options.timeoutMs);
}

/** Bun's native sockets as {@link reach} makes them, each a channel feeding `sink`. */
function nativeSockets({ peer, sink }: ConnectOptions): SocketKind<ByteChannel> {
  const connect = Bun.connect as unknown as ConnectFn;
  return {
    unix: (path, timeoutMs) =>
      openChannel(
        peer,
        sink,
        (socket) => connect({ unix: path, allowHalfOpen: true, socket }),
        timeoutMs,
      ),
    // An fd already connected (vsock-connect.ts) is taken over at once.
    adopt: (fd) =>
      openChannel(peer, sink, (socket) => connect({ fd, allowHalfOpen: true, socket }), Infinity),
    vsockFailed: (_text, err) => err,
  };
}

/** The channel of the socket `connecting` makes with our handlers. */
async function openChannel(
  peer: string,
  sink: ChannelSink,
  connecting: (
    socket: SocketHandler<SocketChannel, "uint8array">,
  ) => Promise<Socket<SocketChannel>>,
  timeoutMs: number,
): Promise<SocketChannel> {
  let channel: SocketChannel | undefined;
  const socket = handlers(peer, sink, (c) => {
    channel = c;
  });
  await withTimeout(connecting(socket), timeoutMs);
  if (channel === undefined) {
    const err: NodeJS.ErrnoException = new Error("connect: closed before it opened");
    err.code = "ECONNRESET";
    throw err;
  }
  return channel;
}

/**
 * `connecting`, or an ETIMEDOUT error after `timeoutMs`; a socket that
 * connects after that is ended, not leaked.
 */
async function withTimeout(
  connecting: Promise<Socket<SocketChannel>>,
  timeoutMs: number,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let gaveUp = false;
  const timeout = new Promise<never>((_, reject) => {
    if (!Number.isFinite(timeoutMs)) return;
    timer = setTimeout(() => {
      gaveUp = true;
      const err: NodeJS.ErrnoException = new Error(`connect: timed out after ${timeoutMs} ms`);
      err.code = "ETIMEDOUT";
      reject(err);
    }, timeoutMs);
  });
  connecting.then(
    (s) => {
      if (gaveUp) s.end();
    },
    () => {},
  );
  try {
    await Promise.race([connecting, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
