/**
 * Stream-socket listeners (unix and vsock) on Bun's native sockets
 * (Bun.listen): no node:net stream machinery between the kernel and the
 * protocol. A vsock socket is created, bound and listening already (see
 * vsock.ts) and adopted by fd.
 */
import { chmodSync } from "node:fs";
import type { Socket, SocketHandler, SocketListener } from "bun";
import type { Acceptor, Listener } from "./channel";
import { CHANNEL_EVENTS, SocketChannel } from "./socket-channel";
import { publishUnixSocket, stageUnixSocket } from "./unix-socket-path";

/** The fd under a native socket (Bun has it as `fd`, not in its types), if any. */
function socketFd(socket: Socket<SocketChannel>): number | undefined {
  const fd = (socket as unknown as { fd?: unknown }).fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

function handlers(
  accept: Acceptor,
  address: string,
  peerCidOf?: (fd: number) => number | undefined,
): SocketHandler<SocketChannel, "uint8array"> {
  let n = 0;
  return {
    binaryType: "uint8array",
    open(socket) {
      const fd = peerCidOf && socketFd(socket);
      const cid = fd === undefined ? undefined : peerCidOf?.(fd);
      const channel = new SocketChannel(socket, `${address}#${++n}`, cid);
      socket.data = channel;
      channel.start(accept(channel));
    },
    ...CHANNEL_EVENTS,
  };
}

function asListener(server: SocketListener<undefined>, address: string): Listener {
  return {
    address,
    // Stop accepting now; a shim keeps its connection open, do not wait for it.
    close: async () => {
      server.stop(false);
    },
  };
}

/**
 * Listens on a unix socket at `path` with mode 0600, bound in a private
 * directory and linked into place (unix-socket-path.ts): never chmod-ed by
 * path, no symlink followed. A stale socket left by an earlier run is
 * replaced; a socket something answers on, or any other kind of file, is a
 * SocketPathError.
 */
export async function listenUnix(path: string, accept: Acceptor): Promise<Listener> {
  const staged = stageUnixSocket(path);
  let server: SocketListener<undefined> | undefined;
  try {
    server = Bun.listen({
      unix: staged.path,
      // EOF from the peer is handled by the channel (answers queued go out first).
      allowHalfOpen: true,
      socket: handlers(accept, `unix://${path}`) as unknown as SocketHandler<undefined>,
    });
    // By path, but inside a 0700 directory of ours: nobody can swap it.
    chmodSync(staged.path, 0o600);
    await publishUnixSocket(staged.path, path);
  } catch (err) {
    server?.stop(true);
    throw err;
  } finally {
    staged.remove();
  }
  return asListener(server, `unix://${path}`);
}

/**
 * Serves connections accepted on an already listening socket fd (vsock).
 * `peerCidOf`, given a connection's fd, names its peer's CID for the channel.
 * Bun.listen takes `fd` although its types do not say so: Bun's own
 * node:net `server.listen({ fd })` is built on exactly this call.
 */
export async function listenFd(
  fd: number,
  accept: Acceptor,
  address: string,
  peerCidOf?: (fd: number) => number | undefined,
): Promise<Listener> {
  const listen = Bun.listen as unknown as (options: {
    fd: number;
    allowHalfOpen: boolean;
    socket: SocketHandler<SocketChannel, "uint8array">;
  }) => SocketListener<undefined>;
  const server = listen({ fd, allowHalfOpen: true, socket: handlers(accept, address, peerCidOf) });
  return asListener(server, address);
}
