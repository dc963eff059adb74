/**
 * The service and method names of requests, read as strings once and then
 * recognised by their bytes. A client sends the same few names call after
 * call; building each one a character at a time made a fresh (rope) string
 * that the method table's Map then had to flatten and hash again on every
 * call. A name seen before comes back as the same string, already hashed.
 *
 * Bounded: {@link NAME_SLOTS} names of at most {@link MAX_NAME_BYTES} bytes
 * are kept (longer ones are read every time), replaced in turn, so a peer
 * sending ever new names costs a comparison per slot, nothing more.
 */

/** Names kept. A client uses a handful (service, method); more only cycle. */
export const NAME_SLOTS = 16;
/** Longest name kept; Kata's are under 40 bytes. */
export const MAX_NAME_BYTES = 64;

/** The ASCII text of buf[start, end), or undefined when a byte is not ASCII. */
export function asciiText(buf: Uint8Array, start: number, end: number): string | undefined {
  let s = "";
  for (let i = start; i < end; i++) {
    const c = buf[i] as number;
    if (c >= 0x80) return undefined;
    s += String.fromCharCode(c);
  }
  return s;
}

export class AsciiNames {
  private readonly bytes: Uint8Array[] = [];
  private readonly texts: string[] = [];
  private next = 0;

  /** The text of buf[start, end) as {@link asciiText} reads it, the same string for the same bytes. */
  text(buf: Uint8Array, start: number, end: number): string | undefined {
    const len = end - start;
    if (len > MAX_NAME_BYTES) return asciiText(buf, start, end);
    const slots = this.bytes.length;
    for (let k = 0; k < slots; k++) {
      const b = this.bytes[k] as Uint8Array;
      if (b.length !== len) continue;
      let i = 0;
      while (i < len && b[i] === buf[start + i]) i++;
      if (i === len) return this.texts[k];
    }
    const s = asciiText(buf, start, end);
    if (s === undefined) return undefined;
    // The same string object each time: flattened and hashed once, by the
    // first lookup, and kept so (JSC resolves a rope string in place).
    const slot = slots < NAME_SLOTS ? slots : this.next;
    this.next = (slot + 1) % NAME_SLOTS;
    this.bytes[slot] = buf.slice(start, end);
    this.texts[slot] = s;
    return s;
  }
}
