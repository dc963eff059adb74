/**
 * How each kind of address is reached, written once for both kinds of
 * socket that dial one (dial.ts: a node:net Socket for clients;
 * connect.ts: Bun's native socket as a ByteChannel for front mode's
 * upstream): `unix:///path` is a connect to the path; `vsock://CID:PORT`
 * a non-blocking connect (vsock-connect.ts, bun:ffi, loaded only for a
 * vsock address) whose fd the socket takes over; `hvsock:///uds:PORT`
 * (Firecracker / Cloud Hypervisor hybrid vsock) a connect to the path
 * followed by the socket kind's handshake; `serial://` is the guest's side
 * of a port and is never dialled. No socket is made here: the kind of
 * socket makes it, and says how a failure reads.
 */
import { Code, TtrpcError } from "../ttrpc/codes";
import { type AgentAddress, formatAddress } from "./address";

/** What one kind of socket does for {@link reach}. */
export interface SocketKind<T> {
  /** Connects to a unix socket at `path`, giving up after `timeoutMs`. */
  unix(path: string, timeoutMs: number): Promise<T>;
  /** Takes over `fd`, a connected stream socket. */
  adopt(fd: number): Promise<T>;
  /**
   * The hybrid-vsock handshake on a socket connected to the muxer
   * (`CONNECT <port>\n`, then the `OK` line); a kind without it dials no
   * `hvsock://` address.
   */
  hybrid?(socket: T, port: number, timeoutMs: number): Promise<void>;
  /** A vsock connect that failed (`err` has the errno name as `code`), as this kind reports it. */
  vsockFailed(text: string, err: NodeJS.ErrnoException): Error;
}

/** Connects to `address` by the means its kind needs, on a socket of `kind`. */
export async function reach<T>(
  address: AgentAddress,
  kind: SocketKind<T>,
  timeoutMs: number,
): Promise<T> {
  switch (address.kind) {
    case "unix":
      return kind.unix(address.path, timeoutMs);
    case "vsock":
      return kind.adopt(await vsockFd(address, kind, timeoutMs));
    case "hvsock": {
      if (kind.hybrid === undefined) {
        throw new TtrpcError(
          `connect ${formatAddress(address)}: hybrid vsock is dialled by clients only`,
          Code.INVALID_ARGUMENT,
        );
      }
      const socket = await kind.unix(address.path, timeoutMs);
      await kind.hybrid(socket, address.port, timeoutMs);
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

async function vsockFd<T>(
  address: Extract<AgentAddress, { kind: "vsock" }>,
  kind: SocketKind<T>,
  timeoutMs: number,
): Promise<number> {
  const text = formatAddress(address);
  let connectVsock: typeof import("./vsock-connect").vsockConnectNonBlocking;
  try {
    connectVsock = (await import("./vsock-connect")).vsockConnectNonBlocking;
  } catch (err) {
    throw new TtrpcError(`connect ${text}: vsock needs Bun (bun:ffi)`, Code.UNIMPLEMENTED, {
      cause: err,
    });
  }
  try {
    return await connectVsock(address.cid, address.port, timeoutMs);
  } catch (err) {
    throw kind.vsockFailed(text, err as NodeJS.ErrnoException);
  }
}
