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

/** Only ASCII is written by hand: its UTF-8 bytes are its char codes. */
export function isAscii(s: unknown): s is string {
  if (typeof s !== "string") return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
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

  constructor(size: number) {
    this.out = new Uint8Array(size);
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

  ascii(s: string): void {
    const out = this.out;
    for (let i = 0; i < s.length; i++) out[this.at++] = s.charCodeAt(i);
  }
}
