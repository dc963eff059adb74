/**
 * Outgoing stream connections on Bun's native sockets, as the same
 * {@link ByteChannel} an accepted connection is (socket-channel.ts): for
 * the agent's own calls to another ttRPC server (front mode's upstream).
 * `unix:///path` through Bun.connect; `vsock://CID:PORT` connected without
 * blocking (vsock-connect.ts) and adopted by fd.
 */
import type { Socket, SocketHandler } from "bun";
import type { AgentAddress } from "./address";
import type { ByteChannel, ChannelSink } from "./channel";
import { CHANNEL_EVENTS, SocketChannel } from "./socket-channel";
import { vsockConnectNonBlocking } from "./vsock-connect";

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
export async function connectChannel(
  address: DialAddress,
  options: ConnectOptions,
): Promise<ByteChannel> {
  const { peer, sink, timeoutMs } = options;
  let channel: SocketChannel | undefined;
  const socket = handlers(peer, sink, (c) => {
    channel = c;
  });
  const connect = Bun.connect as unknown as ConnectFn;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let gaveUp = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      gaveUp = true;
      const err: NodeJS.ErrnoException = new Error(`connect: timed out after ${timeoutMs} ms`);
      err.code = "ETIMEDOUT";
      reject(err);
    }, timeoutMs);
  });
  try {
    const connecting =
      address.kind === "unix"
        ? connect({ unix: address.path, allowHalfOpen: true, socket })
        : vsockConnectNonBlocking(address.cid, address.port, timeoutMs).then((fd) =>
            connect({ fd, allowHalfOpen: true, socket }),
          );
    // A connect that completes after the timeout must not leak its socket.
    connecting.then(
      (s) => {
        if (gaveUp) s.end();
      },
      () => {},
    );
    await Promise.race([connecting, timeout]);
  } finally {
    clearTimeout(timer);
  }
  if (channel === undefined) {
    const err: NodeJS.ErrnoException = new Error("connect: closed before it opened");
    err.code = "ECONNRESET";
    throw err;
  }
  return channel;
}
