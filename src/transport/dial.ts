/**
 * Dialing an agent as a node:net Socket, for clients (the typed client,
 * netagentctl, the client library under Node): the addresses as reach.ts
 * reaches them, on node:net, with the hybrid-vsock handshake (write
 * `CONNECT <port>\n` in one write, read the `OK <n>\n` line, then frames).
 * Runs under Node for unix and hvsock; vsock needs Bun (bun:ffi). The
 * agent's front dials the same way on Bun's native sockets (connect.ts).
 */
import { connect, Socket } from "node:net";
import { Code, TtrpcError } from "../ttrpc/codes";
import { type AgentAddress, parseAddress } from "./address";
import { reach, type SocketKind } from "./reach";

/** Connects to `address` and resolves with a socket ready for ttRPC frames. */
export async function dial(address: string | AgentAddress, timeoutMs = 10_000): Promise<Socket> {
  const addr = typeof address === "string" ? parseAddress(address) : address;
  return reach(addr, NODE_SOCKETS, timeoutMs);
}

const NODE_SOCKETS: SocketKind<Socket> = {
  unix: connectUnix,
  adopt: async (fd) => new Socket({ fd, readable: true, writable: true }),
  hybrid: hybridHandshake,
  vsockFailed: (text, err) =>
    new TtrpcError(`connect ${text}: ${err.code ?? String(err)}`, Code.UNAVAILABLE, {
      cause: err,
    }),
};

function connectUnix(path: string, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new TtrpcError(`connect ${path}: timed out`, Code.UNAVAILABLE));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.off("error", onError);
      resolve(socket);
    });
    const onError = (err: Error) => {
      clearTimeout(timer);
      reject(new TtrpcError(`connect ${path}: ${err.message}`, Code.UNAVAILABLE, { cause: err }));
    };
    socket.once("error", onError);
  });
}

/**
 * The hybrid-vsock handshake. Reads byte by byte up to the newline so no
 * frame byte that follows `OK` is consumed here.
 */
function hybridHandshake(socket: Socket, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let line = "";
    const fail = (why: string) => {
      cleanup();
      socket.destroy();
      reject(new TtrpcError(`hybrid vsock CONNECT ${port}: ${why}`, Code.UNAVAILABLE));
    };
    const timer = setTimeout(() => fail("no answer"), timeoutMs);
    const onReadable = () => {
      for (;;) {
        const byte: Buffer | null = socket.read(1);
        if (byte === null) return;
        const ch = String.fromCharCode(byte[0] as number);
        if (ch === "\n") {
          cleanup();
          if (/^OK\b/.test(line)) resolve();
          else fail(`unexpected answer ${JSON.stringify(line)}`);
          return;
        }
        line += ch;
        if (line.length > 64) return fail("answer too long");
      }
    };
    const onEnd = () => fail("connection closed");
    const onError = (err: Error) => fail(err.message);
    const cleanup = () => {
      clearTimeout(timer);
      socket.off("readable", onReadable);
      socket.off("end", onEnd);
      socket.off("error", onError);
    };
    socket.on("readable", onReadable);
    socket.once("end", onEnd);
    socket.once("error", onError);
    socket.write(`CONNECT ${port}\n`);
  });
}
