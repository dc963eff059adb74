/**
 * Outgoing bytes of one stream socket whose `write` takes what the kernel
 * accepts and returns that count (Bun's native sockets keep nothing back).
 * Frames queued in one event-loop turn leave together in one write; what
 * the kernel did not take is kept, in order, and written on drain.
 */

/** Writes bytes to the socket now; returns how many it took (negative: closed). */
export type WriteNow = (bytes: Uint8Array) => number;

/** Runs `fn` once the current event-loop turn has ended. */
export type AfterTurn = (fn: () => void) => void;

const afterTurn: AfterTurn = (fn) => {
  setImmediate(fn);
};

/** Joins chunks into one buffer (one system call for all of them). */
function concat(chunks: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export class WriteQueue {
  private chunks: Uint8Array[] = [];
  private bytes = 0;
  /** chunks[0] is what a partial write left: it goes alone, never copied again. */
  private remainder = false;
  private waiting = false;
  private scheduled = false;
  private readonly flushTurn = () => {
    this.scheduled = false;
    this.flush();
  };

  /**
   * @param writeNow the socket's write
   * @param onBlocked told when the kernel stopped taking bytes (a drain will follow)
   */
  constructor(
    private readonly writeNow: WriteNow,
    private readonly onBlocked: () => void,
    private readonly schedule: AfterTurn = afterTurn,
  ) {}

  /** Bytes queued and not yet taken by the kernel. */
  get bufferedBytes(): number {
    return this.bytes;
  }

  /** True between a partial write and the drain that follows it. */
  get blocked(): boolean {
    return this.waiting;
  }

  /** Queues a frame; it leaves with the others of this turn, after any backlog. */
  push(frame: Uint8Array): void {
    if (frame.length === 0) return;
    this.chunks.push(frame);
    this.bytes += frame.length;
    if (!this.waiting && !this.scheduled) {
      this.scheduled = true;
      this.schedule(this.flushTurn);
    }
  }

  /** The socket can take bytes again. Returns true when nothing is left queued. */
  drain(): boolean {
    this.waiting = false;
    this.flush();
    return this.bytes === 0;
  }

  /** Writes what is queued now, until done or the kernel stops taking bytes. */
  flush(): void {
    while (this.chunks.length > 0 && !this.waiting) {
      const n = this.remainder || this.chunks.length === 1 ? 1 : this.chunks.length;
      const out = n === 1 ? (this.chunks[0] as Uint8Array) : concat(this.chunks, this.bytes);
      const taken = Math.max(0, this.writeNow(out));
      this.bytes -= taken;
      if (taken === out.length) {
        this.chunks.splice(0, n);
        this.remainder = false;
        continue;
      }
      // The rest goes first on drain, before frames queued meanwhile.
      this.chunks.splice(0, n, out.subarray(taken));
      this.remainder = true;
      this.waiting = true;
      this.onBlocked();
    }
  }

  /** Drops everything queued (the socket is gone). */
  clear(): void {
    this.chunks = [];
    this.bytes = 0;
    this.remainder = false;
  }
}
