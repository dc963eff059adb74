/**
 * Reading netagentctl's input files (`--file`, `--cni-result`) with limits:
 * a regular file (or `-`, stdin: a pipe or a file) of at most
 * {@link MAX_INPUT_BYTES}. A FIFO, a device (/dev/zero) or a directory is
 * refused before anything is read, checked on the opened file itself
 * (O_NONBLOCK, so opening a FIFO does not wait for a writer).
 *
 * 16 MiB: the agent takes frames of up to 4 MiB, and protobuf JSON is at
 * most about four times its binary form (names, quotes, base 10), so no
 * request that fits a frame is refused here, and nothing near a gigabyte
 * is read into memory.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

const MAX_INPUT_BYTES = 16 * 1024 * 1024;

/** Why an input cannot be read; the caller reports it as a usage error (exit 2). */
export class InputError extends Error {}

/** Reads `path` ("-" = stdin) as UTF-8 within `max` bytes; throws InputError. */
export function readInputFile(path: string, max = MAX_INPUT_BYTES): string {
  return readInputBytes(path, max).toString("utf8");
}

/** Reads `path` ("-" = stdin) as bytes within `max` bytes; throws InputError. */
export function readInputBytes(path: string, max = MAX_INPUT_BYTES): Buffer {
  if (path === "-") return readCapped(0, max, "stdin");
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    throw new InputError((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InputError(`not a regular file (${kind(st)})`);
    if (st.size > max) throw new InputError(`${st.size} bytes, more than the limit of ${max}`);
    return readCapped(fd, max, "file");
  } finally {
    closeSync(fd);
  }
}

function kind(st: ReturnType<typeof fstatSync>): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isDirectory()) return "a directory";
  if (st.isSocket()) return "a socket";
  return "not a file";
}

/** Reads `fd` to its end, failing once more than `max` bytes have come. */
function readCapped(fd: number, max: number, what: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunk = Buffer.alloc(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A non-blocking stdin pipe with nothing yet: wait a little, read again.
      if (code === "EAGAIN") {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        continue;
      }
      throw new InputError(code ?? (err as Error).message);
    }
    if (n === 0) break;
    total += n;
    if (total > max) throw new InputError(`${what} holds more than the limit of ${max} bytes`);
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
  return Buffer.concat(chunks);
}
