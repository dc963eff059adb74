/**
 * A virtio-serial port as one long-lived connection. In a QEMU guest a read
 * blocks until the host side connects and sends; once the host hangs up,
 * read() returns 0 at once, over and over, until a host connects again. So
 * EOF means "host gone": the connection is closed (the next one starts its
 * stream ids afresh) and the port is tried again after a short backoff.
 */
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import type { Acceptor, Listener } from "./channel";

const VIRTIO_PORTS = "/sys/class/virtio-ports";
const READ_SIZE = 64 * 1024;
const BACKOFF_MIN_MS = 20;
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
    while (!stopped) {
      let writes = Promise.resolve();
      let open = true;
      const channel = {
        peer: path,
        write(bytes: Uint8Array) {
          if (!open) return;
          // Writes are chained so frames reach the port whole and in order.
          writes = writes
            .then(async () => {
              let off = 0;
              while (off < bytes.length) {
                const { bytesWritten } = await handle.write(bytes, off, bytes.length - off);
                off += bytesWritten;
              }
            })
            .catch(() => {});
        },
        close() {
          open = false;
        },
      };
      const sink = accept(channel);
      if (sink === undefined) return;
      let sawData = false;
      while (!stopped && open) {
        let n: number;
        try {
          ({ bytesRead: n } = await handle.read(buf, 0, READ_SIZE, null));
        } catch {
          n = 0;
        }
        if (n === 0) break;
        sawData = true;
        backoff = BACKOFF_MIN_MS;
        sink.receive(buf.slice(0, n));
      }
      open = false;
      sink.closed();
      await writes;
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
