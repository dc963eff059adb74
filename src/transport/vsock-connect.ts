/**
 * A non-blocking AF_VSOCK connect through bun:ffi, for the agent's own
 * event loop: a blocking connect(2) to a CID that does not answer (no
 * vsock loopback in the guest) holds the calling thread for the kernel's
 * connect timeout, two seconds, during which no call would be served.
 * Instead: connect with SOCK_NONBLOCK, look at the socket with poll(2)
 * (timeout 0) on a short timer until it is writable, read SO_ERROR.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { AF_VSOCK, errnoError, lastErrno, SOCK_CLOEXEC, SOCK_STREAM, sockaddrVm } from "./vsock";

const SOCK_NONBLOCK = 0o4000;
const SOL_SOCKET = 1;
const SO_ERROR = 4;
const POLLOUT = 0x4;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const EINPROGRESS = 115;
/** How often a connect in progress is looked at. */
const POLL_EVERY_MS = 2;

let libc: ReturnType<typeof openLibc> | undefined;

function openLibc() {
  return dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    connect: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
    getsockopt: {
      args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr],
      returns: FFIType.i32,
    },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    __errno_location: { args: [], returns: FFIType.ptr },
  }).symbols;
}

/**
 * Connects to `cid:port` without blocking; resolves with the connected fd
 * (the caller owns it), rejects with an ErrnoException (code ECONNRESET,
 * ETIMEDOUT, ...) or, after `timeoutMs`, ETIMEDOUT.
 */
export function vsockConnectNonBlocking(
  cid: number,
  port: number,
  timeoutMs: number,
): Promise<number> {
  libc ??= openLibc();
  const c = libc;
  const errno = () => lastErrno(c.__errno_location);
  const fd = c.socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Promise.reject(errnoError("connect", errno()));
  const addr = sockaddrVm(cid, port);
  if (c.connect(fd, ptr(addr), addr.length) === 0) return Promise.resolve(fd);
  const first = errno();
  if (first !== EINPROGRESS) {
    c.close(fd);
    return Promise.reject(errnoError("connect", first));
  }
  // struct pollfd { int fd; short events; short revents; }
  const pollfd = new Int32Array(2);
  const soError = new Int32Array(1);
  const soLen = new Uint32Array([4]);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const look = () => {
      pollfd[0] = fd;
      pollfd[1] = POLLOUT;
      const n = c.poll(ptr(pollfd), 1, 0);
      const revents = (pollfd[1] as number) >>> 16;
      if (n > 0 && (revents & (POLLOUT | POLLERR | POLLHUP)) !== 0) {
        soError[0] = 0;
        c.getsockopt(fd, SOL_SOCKET, SO_ERROR, ptr(soError), ptr(soLen));
        const e = soError[0] as number;
        if (e === 0 && (revents & (POLLERR | POLLHUP)) === 0) return resolve(fd);
        c.close(fd);
        return reject(errnoError("connect", e === 0 ? 104 : e));
      }
      if (performance.now() - started >= timeoutMs) {
        c.close(fd);
        return reject(errnoError("connect", 110));
      }
      setTimeout(look, POLL_EVERY_MS);
    };
    look();
  });
}
