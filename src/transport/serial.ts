/**
 * A virtio-serial port as one long-lived connection. In a QEMU guest a read
 * blocks until the host side connects and sends; once the host hangs up,
 * read() returns 0 at once, over and over, until a host connects again. So
 * EOF means "host gone": the connection is closed (the next one starts its
 * stream ids afresh) and the port is tried again after a short backoff.
 * A host that hangs up and reconnects quickly is not always seen as EOF (the
 * guest's blocked read wakes to find the host connected again), so a new
 * host session is also recognised in-band: see {@link HostSessionSplitter}.
 */
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { FrameType, HEADER_LENGTH } from "../ttrpc/frame";
import type { Acceptor, ChannelSink, Listener } from "./channel";

const VIRTIO_PORTS = "/sys/class/virtio-ports";
const READ_SIZE = 64 * 1024;
const BACKOFF_MIN_MS = 20;
const MAX_QUEUED_BYTES = 1 << 20;
const BACKOFF_MAX_MS = 500;

/** The /dev path of the virtio-serial port named `name` (its `name` file in sysfs). */
export function findVirtioPort(name: string, sysfs = VIRTIO_PORTS): string {
  let ports: string[];
  try {
    ports = readdirSync(sysfs);
  } catch {
    throw new Error(`no virtio-serial ports (${sysfs} missing)`);
  }
  for (const port of ports) {
    try {
      if (readFileSync(`${sysfs}/${port}/name`, "utf8").trim() === name) return `/dev/${port}`;
    } catch {
      // A port without a name file is unnamed: skip it.
    }
  }
  throw new Error(`no virtio-serial port named ${JSON.stringify(name)} in ${sysfs}`);
}

/**
 * Serves the serial device at `path`. Resolves once the device is open;
 * the returned listener's close() stops the loop.
 */
export async function listenSerial(path: string, accept: Acceptor): Promise<Listener> {
  // Probe once synchronously so a wrong path fails at start, with exit 2.
  closeSync(openSync(path, "r+"));
  const handle: FileHandle = await open(path, "r+");
  let stopped = false;
  let wake: (() => void) | undefined;

  const loop = async () => {
    const buf = new Uint8Array(READ_SIZE);
    let backoff = BACKOFF_MIN_MS;
    const openSession = () => {
      const session = {
        open: true,
        writes: Promise.resolve(),
        /** Bytes handed to write() and not yet taken by the port. */
        queued: 0,
        /** The protocol asked to stop reading (its calls are at their cap). */
        readPaused: false,
        wakeRead: undefined as (() => void) | undefined,
        sink: undefined as ChannelSink | undefined,
      };
      session.sink = accept({
        peer: path,
        write(bytes: Uint8Array) {
          if (!session.open) return;
          session.queued += bytes.length;
          // Writes are chained so frames reach the port whole and in order.
          session.writes = session.writes
            .then(async () => {
              let off = 0;
              while (off < bytes.length) {
                const { bytesWritten } = await handle.write(bytes, off, bytes.length - off);
                off += bytesWritten;
              }
            })
            .catch(() => {})
            .finally(() => {
              session.queued -= bytes.length;
              if (session.queued === 0 && session.open) session.sink?.writable?.();
            });
        },
        get bufferedBytes() {
          return session.queued;
        },
        setReadPaused(paused: boolean) {
          session.readPaused = paused;
          if (!paused) session.wakeRead?.();
        },
        close() {
          session.open = false;
          session.wakeRead?.();
        },
      });
      return session;
    };
    const endSession = async (session: ReturnType<typeof openSession>) => {
      session.open = false;
      session.sink?.closed();
      await session.writes;
    };
    while (!stopped) {
      let session = openSession();
      if (session.sink === undefined) return;
      const splitter = new HostSessionSplitter();
      let sawData = false;
      while (!stopped && session.open) {
        // Back-pressure: while the host leaves answers unread, read no more
        // of its requests, or the answers would pile up here without bound.
        if (session.queued > MAX_QUEUED_BYTES) await session.writes;
        while (session.readPaused && session.open && !stopped) {
          // Woken by a resume or a close; the timer notices a stopped listener.
          await new Promise<void>((resolve) => {
            session.wakeRead = resolve;
            setTimeout(resolve, 100);
          });
        }
        let n: number;
        try {
          ({ bytesRead: n } = await handle.read(buf, 0, READ_SIZE, null));
        } catch {
          n = 0;
        }
        if (n === 0) break;
        sawData = true;
        backoff = BACKOFF_MIN_MS;
        for (const part of splitter.split(buf.slice(0, n))) {
          if (part.fresh) {
            await endSession(session);
            session = openSession();
            if (session.sink === undefined) return;
          }
          session.sink?.receive(part.bytes);
        }
      }
      await endSession(session);
      if (stopped) break;
      // EOF with nothing read: no host yet; back off, growing, without spinning.
      if (!sawData) backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, backoff);
      });
    }
  };
  const done = loop().finally(() => handle.close().catch(() => {}));
  return {
    address: `serial://${path}`,
    async close() {
      stopped = true;
      wake?.();
      // A blocked read cannot be interrupted; do not wait for it.
      await Promise.race([done, new Promise((r) => setTimeout(r, 50))]);
    },
  };
}

/**
 * Finds where a new host session starts in the byte stream of one serial
 * "connection". ttRPC clients number their streams from 1, so a request on
 * stream 1 after any earlier frame can only come from a new client: the
 * host hung up and reconnected without the guest reading EOF in between.
 * Tracks frame boundaries only (header, then skip the data); an incomplete
 * header is held back until the rest arrives, so a split never lands
 * inside one.
 */
export class HostSessionSplitter {
  private remaining = 0;
  private pending = new Uint8Array(0);
  private frames = 0;

  /** The chunk in parts, in order; `fresh` marks a part that starts a new session. */
  split(input: Uint8Array): { bytes: Uint8Array; fresh: boolean }[] {
    let chunk = input;
    if (this.pending.length > 0) {
      chunk = new Uint8Array(this.pending.length + input.length);
      chunk.set(this.pending);
      chunk.set(input, this.pending.length);
      this.pending = new Uint8Array(0);
    }
    const parts: { bytes: Uint8Array; fresh: boolean }[] = [];
    let from = 0;
    let fresh = false;
    let end = chunk.length;
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining > 0) {
        const k = Math.min(this.remaining, chunk.length - i);
        this.remaining -= k;
        i += k;
        continue;
      }
      if (chunk.length - i < HEADER_LENGTH) {
        this.pending = chunk.slice(i);
        end = i;
        break;
      }
      const view = new DataView(chunk.buffer, chunk.byteOffset + i, HEADER_LENGTH);
      if (view.getUint8(8) === FrameType.Request && view.getUint32(4) === 1 && this.frames > 0) {
        if (i > from) parts.push({ bytes: chunk.subarray(from, i), fresh });
        from = i;
        fresh = true;
        this.frames = 0;
      }
      this.frames++;
      this.remaining = view.getUint32(0);
      i += HEADER_LENGTH;
    }
    if (end > from) parts.push({ bytes: chunk.subarray(from, end), fresh });
    return parts;
  }
}
