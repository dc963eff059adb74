/**
 * The pieces the hand-written encoders (routes-writer.ts, state-writer.ts)
 * share: field sizes as protobuf's wire format counts them, the value
 * checks that decide whether a message is theirs to write or toBinary's,
 * and a writer into a buffer of the exact size. Zero values are left out,
 * as proto3 and toBinary leave them out.
 */

/** Bytes of a varint of at most 32 bits. */
export function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

export const isUint32 = (v: unknown): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0xffffffff;

/**
 * Only ASCII is written by hand: its UTF-8 bytes are its char codes. A
 * string is ASCII exactly when its UTF-8 length is its length (any other
 * character takes two bytes or more). Asked natively: a loop over the
 * characters runs cold in the agent (each answer's strings are checked
 * once), and slower still with the JIT off, as under TCG (figures:
 * bench/README.md, row 12).
 */
export function isAscii(s: unknown): s is string {
  return typeof s === "string" && Buffer.byteLength(s, "utf8") === s.length;
}

/** A field's bytes with its tag (`tagBytes` long); none for a zero value. */
export const stringSize = (s: string, tagBytes = 1) =>
  s.length === 0 ? 0 : tagBytes + varintSize(s.length) + s.length;
export const numberSize = (v: number, tagBytes = 1) => (v === 0 ? 0 : tagBytes + varintSize(v));
/** A bool field of a one-byte tag: tag and 1 when true, nothing when false. */
export const boolSize = (b: boolean) => (b ? 2 : 0);

/**
 * Writes into a buffer sized beforehand. A tag is the field's tag value,
 * written as a varint (fields 16 and up take two bytes).
 */
export class ProtoWriter {
  readonly out: Uint8Array;
  at = 0;
  /** `out` as a Buffer, for its native latin1 write. */
  private readonly text: Buffer;

  constructor(size: number) {
    this.out = new Uint8Array(size);
    this.text = Buffer.from(this.out.buffer, this.out.byteOffset, size);
  }

  varint(v: number): void {
    const out = this.out;
    while (v >= 0x80) {
      out[this.at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    out[this.at++] = v;
  }

  /** An ASCII string field (isAscii): nothing for an empty one. */
  string(tag: number, s: string): void {
    if (s.length === 0) return;
    this.varint(tag);
    this.varint(s.length);
    this.ascii(s);
  }

  number(tag: number, v: number): void {
    if (v === 0) return;
    this.varint(tag);
    this.varint(v);
  }

  bool(tag: number, b: boolean): void {
    if (b) this.number(tag, 1);
  }

  /** A length-delimited field of bytes already encoded (an element toBinary wrote). */
  bytesField(tag: number, b: Uint8Array): void {
    this.varint(tag);
    this.varint(b.length);
    this.out.set(b, this.at);
    this.at += b.length;
  }

  /**
   * An ASCII string's bytes (its char codes, as latin1 writes them):
   * natively, for the reason {@link isAscii} asks natively.
   */
  ascii(s: string): void {
    this.at += this.text.write(s, this.at, s.length, "latin1");
  }
}
