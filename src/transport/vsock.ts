/**
 * AF_VSOCK listening socket through bun:ffi (Bun and Node have no vsock):
 * socket(2), bind(2) and listen(2) from libc; Bun.listen adopts the fd.
 */
import { dlopen, FFIType, type Pointer, ptr, read } from "bun:ffi";
import { VMADDR_CID_ANY } from "./address";

export const AF_VSOCK = 40;
export const SOCK_STREAM = 1;
export const SOCK_CLOEXEC = 0o2000000;
const SOCKADDR_VM_SIZE = 16;

/** The errno values a vsock socket, bind, listen or connect is known to fail with. */
const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  13: "EACCES",
  19: "ENODEV",
  22: "EINVAL",
  97: "EAFNOSUPPORT",
  98: "EADDRINUSE",
  99: "EADDRNOTAVAIL",
  101: "ENETUNREACH",
  104: "ECONNRESET",
  110: "ETIMEDOUT",
  111: "ECONNREFUSED",
  113: "EHOSTUNREACH",
};

let libc: ReturnType<typeof openLibc> | undefined;

function openLibc() {
  return dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getpeername: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

/** The calling thread's errno, read through libc's `__errno_location`. */
export function lastErrno(errnoLocation: () => Pointer | bigint | null): number {
  return read.i32(errnoLocation() as Pointer, 0);
}

/** An Error with `code` set to the errno name (e.g. "EADDRINUSE"), saying which `call` failed. */
export function errnoError(call: string, errno: number): NodeJS.ErrnoException {
  const code = ERRNO_NAMES[errno] ?? `errno ${errno}`;
  const err: NodeJS.ErrnoException = new Error(`vsock ${call}: ${code}`);
  err.code = code;
  err.errno = errno;
  return err;
}

/** struct sockaddr_vm { sa_family_t family; u16 reserved; u32 port; u32 cid; u8 flags; u8 zero[3]; } */
export function sockaddrVm(cid: number, port: number): Uint8Array {
  const buf = new Uint8Array(SOCKADDR_VM_SIZE);
  const view = new DataView(buf.buffer);
  view.setUint16(0, AF_VSOCK, true);
  view.setUint32(4, port, true);
  view.setUint32(8, cid, true);
  return buf;
}

/**
 * Creates a listening AF_VSOCK socket on `cid:port` (CID any by default) and
 * returns its fd; throws an ErrnoException (e.g. code EADDRINUSE) on failure.
 */
export function vsockListenFd(port: number, cid = VMADDR_CID_ANY, backlog = 128): number {
  libc ??= openLibc();
  const c = libc;
  const errno = () => lastErrno(c.__errno_location);
  const fd = c.socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw errnoError("socket", errno());
  const addr = sockaddrVm(cid, port);
  if (c.bind(fd, ptr(addr), SOCKADDR_VM_SIZE) < 0) {
    const e = errno();
    c.close(fd);
    throw errnoError("bind", e);
  }
  if (c.listen(fd, backlog) < 0) {
    const e = errno();
    c.close(fd);
    throw errnoError("listen", e);
  }
  return fd;
}

/**
 * The CID of the peer of a connected AF_VSOCK socket `fd` (getpeername(2)),
 * or undefined when the fd is not a connected vsock socket.
 */
export function vsockPeerCid(fd: number): number | undefined {
  libc ??= openLibc();
  const addr = new Uint8Array(SOCKADDR_VM_SIZE);
  const len = new Uint32Array([SOCKADDR_VM_SIZE]);
  if (libc.getpeername(fd, ptr(addr), ptr(len)) < 0) return undefined;
  const view = new DataView(addr.buffer);
  if ((len[0] ?? 0) < 12 || view.getUint16(0, true) !== AF_VSOCK) return undefined;
  return view.getUint32(8, true);
}
