/**
 * Stream-socket listeners (unix and vsock) on node:net. A vsock socket is
 * created, bound and listening already (see vsock.ts) and adopted by fd.
 */
import { chmodSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import type { Acceptor, Listener } from "./channel";
import { publishUnixSocket, stageUnixSocket } from "./unix-socket-path";

/** How long a refused connection may take to hang up after our EOF. */
const REFUSED_LINGER_MS = 1000;

/** Attaches a connected socket to the acceptor. */
export function adoptSocket(
  socket: Socket,
  accept: Acceptor,
  peer: string,
  peerCid?: number,
): void {
  let open = true;
  // Reading pauses for either reason and resumes only when neither holds.
  let writeBlocked = false;
  let busy = false;
  // Answers finished in the same turn of the event loop leave together
  // (cork until the turn ends): one system call for many concurrent calls.
  let corked = false;
  const uncork = () => {
    corked = false;
    if (!socket.destroyed) socket.uncork();
  };
  const channel = {
    peer,
    ...(peerCid === undefined ? {} : { peerCid }),
    write(bytes: Uint8Array) {
      if (!open || socket.destroyed) return;
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(uncork);
      }
      // Back-pressure, as Go's blocking writes give it: while the peer is not
      // reading its answers, stop reading its requests, or they pile up here.
      if (!socket.write(bytes)) {
        writeBlocked = true;
        socket.pause();
      }
    },
    setReadPaused(paused: boolean) {
      busy = paused;
      if (busy) socket.pause();
      else if (!writeBlocked) socket.resume();
    },
    close() {
      socket.destroy();
    },
    get bufferedBytes() {
      return socket.writableLength;
    },
  };
  const sink = accept(channel);
  if (sink === undefined) {
    // Refused: an orderly close. Destroying a socket whose peer already sent
    // its first request makes the peer see a reset (even on connect, under
    // Bun); instead send EOF and drop what it sends until it hangs up.
    socket.on("error", () => {});
    socket.resume();
    socket.end();
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
    return;
  }
  socket.on("data", (chunk: Buffer) => sink.receive(chunk));
  socket.on("drain", () => {
    writeBlocked = false;
    if (!busy) socket.resume();
    sink.writable?.();
  });
  socket.on("error", () => {});
  socket.on("close", () => {
    open = false;
    sink.closed();
  });
}

/** The fd under a Bun socket (Bun keeps it as `_handle.fd`), if any. */
function socketFd(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

function serve(
  server: Server,
  accept: Acceptor,
  address: string,
  peerCidOf?: (fd: number) => number | undefined,
): Listener {
  let n = 0;
  server.on("connection", (socket) => {
    const fd = peerCidOf && socketFd(socket);
    const cid = fd === undefined ? undefined : peerCidOf?.(fd);
    adoptSocket(socket, accept, `${address}#${++n}`, cid);
  });
  return {
    address,
    // server.close()'s callback waits until every connection has ended, and a
    // shim keeps its connection open: stop accepting now, do not wait for it.
    close: async () => {
      server.close();
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
  const server = createServer({ pauseOnConnect: false });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(staged.path, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // By path, but inside a 0700 directory of ours: nobody can swap it.
    chmodSync(staged.path, 0o600);
    await publishUnixSocket(staged.path, path);
  } catch (err) {
    server.close();
    throw err;
  } finally {
    staged.remove();
  }
  return serve(server, accept, `unix://${path}`);
}

/**
 * Serves connections accepted on an already listening socket fd (vsock).
 * `peerCidOf`, given a connection's fd, names its peer's CID for the channel.
 */
export async function listenFd(
  fd: number,
  accept: Acceptor,
  address: string,
  peerCidOf?: (fd: number) => number | undefined,
): Promise<Listener> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ fd }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return serve(server, accept, address, peerCidOf);
}
