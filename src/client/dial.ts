/**
 * Host-side dialing: `unix:///path`, `vsock://CID:PORT` and
 * `hvsock:///uds:PORT` (Firecracker / Cloud Hypervisor hybrid vsock: write
 * `CONNECT <port>\n` in one write, read the `OK <n>\n` line, then frames).
 */
import { connect, Socket } from "node:net";
import { type AgentAddress, parseAddress } from "../transport/address";
import { vsockConnectFd } from "../transport/vsock";
import { Code, TtrpcError } from "../ttrpc/codes";

/** Connects to `address` and resolves with a socket ready for ttRPC frames. */
export async function dial(address: string | AgentAddress, timeoutMs = 10_000): Promise<Socket> {
  const addr = typeof address === "string" ? parseAddress(address) : address;
  switch (addr.kind) {
    case "unix":
      return connectUnix(addr.path, timeoutMs);
    case "vsock":
      return new Socket({
        fd: vsockConnectFd(addr.cid, addr.port),
        readable: true,
        writable: true,
      });
    case "hvsock": {
      const socket = await connectUnix(addr.path, timeoutMs);
      await hybridHandshake(socket, addr.port, timeoutMs);
      return socket;
    }
    case "serial":
    case "serial-name":
      throw new TtrpcError(
        "serial:// is the guest side of a virtio-serial port; dial the host's unix socket for it",
        Code.INVALID_ARGUMENT,
      );
  }
}

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
export function hybridHandshake(socket: Socket, port: number, timeoutMs: number): Promise<void> {
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
