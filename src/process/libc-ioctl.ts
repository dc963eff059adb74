/**
 * ioctl(2) through bun:ffi, for the few facts only an ioctl tells: whether
 * /dev/kvm can make a VM (src/host/vm/accel.ts), what kind of namespace a
 * file is (src/host/follow/sandbox-resolve.ts). Undefined where bun:ffi is
 * not there (outside Bun, or with the JIT off): the caller finds out
 * another way or says it could not.
 */

/** Calls ioctl(fd, req, 0): its result and, when negative, errno. */
export type Ioctl = (fd: number, req: number) => [result: number, errno: number];

let loaded: Promise<Ioctl | undefined> | undefined;

export function libcIoctl(): Promise<Ioctl | undefined> {
  loaded ??= (async () => {
    try {
      const { dlopen, FFIType, read } = await import("bun:ffi");
      const { symbols } = dlopen("libc.so.6", {
        ioctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
        __errno_location: { args: [], returns: FFIType.ptr },
      });
      return (fd: number, req: number): [number, number] => {
        const r = symbols.ioctl(fd, req, 0);
        const errno = r < 0 ? symbols.__errno_location() : null;
        return [r, errno ? read.i32(errno, 0) : 0];
      };
    } catch {
      return undefined;
    }
  })();
  return loaded;
}
