/**
 * The varint reader of the hand-written protobuf readers (routes-reader.ts,
 * state-reader.ts): a varint of at most 32 bits, the only kind their
 * common shapes hold (tags, lengths, enum and uint32 fields). Anything
 * longer is not theirs to read: -1, and the caller hands the whole message
 * to protobuf-es's fromBinary, whose answer or error stands.
 *
 * The position after the varint is left in {@link varintEnd}, not returned
 * in an object: a 10,000-route request holds about 60,000 varints.
 */

/** Where the last {@link varint32} stopped reading (past the varint when it succeeded). */
export let varintEnd = 0;

/**
 * The varint at `buf[at]` before `end`: at most five bytes and 32 bits
 * (nothing dropped), else -1.
 */
export function varint32(buf: Uint8Array, at: number, end: number): number {
  let pos = at;
  let result = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= end) break;
    const b = buf[pos++] as number;
    if (shift === 28) {
      varintEnd = pos;
      return b > 0x0f ? -1 : (result | (b << 28)) >>> 0;
    }
    result |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) {
      varintEnd = pos;
      return result >>> 0;
    }
  }
  varintEnd = pos;
  return -1;
}
