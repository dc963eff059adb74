import { describe, expect, it } from "vitest";
import {
  type DecodedFrame,
  encodeFrame,
  FrameDecoder,
  FrameType,
  HEADER_LENGTH,
  INITIAL_BODY_BUFFER,
  MAX_DATA_LENGTH,
} from "../../src/ttrpc/frame";

function bytes(...values: number[]): Uint8Array {
  return Uint8Array.from(values);
}

function header(length: number, streamId: number, type: number, flags: number): Uint8Array {
  const h = new Uint8Array(HEADER_LENGTH);
  const v = new DataView(h.buffer);
  v.setUint32(0, length);
  v.setUint32(4, streamId);
  h[8] = type;
  h[9] = flags;
  return h;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Feeds `input` in pieces cut at `cuts` and collects the frames. */
function decodeSplit(input: Uint8Array, cuts: number[]): DecodedFrame[] {
  const d = new FrameDecoder();
  const out: DecodedFrame[] = [];
  let prev = 0;
  for (const c of [...cuts, input.length]) {
    out.push(...d.push(input.subarray(prev, c)));
    prev = c;
  }
  expect(d.pending).toBe(false);
  return out;
}

describe("encodeFrame", () => {
  it("matches the reference vector for an OK response", () => {
    const payload = bytes(0x0a, 0x00, 0x12, 0x03, 0x0a, 0x01, 0x61);
    expect([...encodeFrame(1, FrameType.Response, 0, payload)]).toEqual([
      0, 0, 0, 7, 0, 0, 0, 1, 2, 0, 0x0a, 0x00, 0x12, 0x03, 0x0a, 0x01, 0x61,
    ]);
  });

  it("writes the close frame of the reference (stream 5, RC|ND, no data)", () => {
    expect([...encodeFrame(5, FrameType.Data, 0x5, new Uint8Array(0))]).toEqual([
      0, 0, 0, 0, 0, 0, 0, 5, 3, 5,
    ]);
  });

  it("accepts exactly 4 MiB and refuses one byte more", () => {
    expect(encodeFrame(1, FrameType.Request, 0, new Uint8Array(MAX_DATA_LENGTH)).length).toBe(
      MAX_DATA_LENGTH + HEADER_LENGTH,
    );
    expect(() => encodeFrame(1, FrameType.Request, 0, new Uint8Array(MAX_DATA_LENGTH + 1))).toThrow(
      RangeError,
    );
  });
});

describe("FrameDecoder", () => {
  const stream = concat(
    encodeFrame(1, FrameType.Request, 0, bytes(1, 2, 3, 4, 5)),
    encodeFrame(3, FrameType.Data, 0x4, new Uint8Array(0)),
    encodeFrame(0xffff_ffff, 0x7f as FrameType, 0xff, bytes(9)),
  );
  const expected = [
    { kind: "frame", length: 5, streamId: 1, type: 1, flags: 0, data: bytes(1, 2, 3, 4, 5) },
    { kind: "frame", length: 0, streamId: 3, type: 3, flags: 4, data: new Uint8Array(0) },
    { kind: "frame", length: 1, streamId: 0xffff_ffff, type: 0x7f, flags: 0xff, data: bytes(9) },
  ];

  it("decodes the same frames whatever single split point the bytes arrive with", () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(decodeSplit(stream, [cut])).toEqual(expected);
    }
  });

  it("decodes the same frames for every pair of split points", () => {
    for (let a = 0; a <= stream.length; a++) {
      for (let b = a; b <= stream.length; b++) {
        expect(decodeSplit(stream, [a, b])).toEqual(expected);
      }
    }
  });

  it("decodes bytes fed one at a time", () => {
    const cuts = Array.from({ length: stream.length - 1 }, (_, i) => i + 1);
    expect(decodeSplit(stream, cuts)).toEqual(expected);
  });

  it("decodes a 4 MiB frame and reports a 4 MiB + 1 frame as oversize, skipping its body", () => {
    const big = new Uint8Array(MAX_DATA_LENGTH).fill(7);
    const over = concat(header(MAX_DATA_LENGTH + 1, 9, 1, 0), new Uint8Array(MAX_DATA_LENGTH + 1));
    const after = encodeFrame(11, FrameType.Request, 0, bytes(42));
    const input = concat(encodeFrame(7, FrameType.Request, 0, big), over, after);
    const frames = decodeSplit(input, [3, 12, 100_000, MAX_DATA_LENGTH + 15, MAX_DATA_LENGTH + 40]);
    expect(frames.map((f) => [f.kind, f.streamId, f.length])).toEqual([
      ["frame", 7, MAX_DATA_LENGTH],
      ["oversize", 9, MAX_DATA_LENGTH + 1],
      ["frame", 11, 1],
    ]);
    const last = frames[2];
    expect(last?.kind === "frame" && [...last.data]).toEqual([42]);
  });

  it("reports a length of 2^32-1 as oversize at once, before any body arrives", () => {
    const d = new FrameDecoder();
    expect(d.push(header(0xffff_ffff, 1, 1, 0))).toEqual([
      { kind: "oversize", length: 0xffff_ffff, streamId: 1, type: 1, flags: 0 },
    ]);
    expect(d.pending).toBe(true);
  });
});

describe("FrameDecoder memory grows with the bytes received", () => {
  it("a header announcing 4 MiB holds 4 KiB, then about twice what has arrived", () => {
    const d = new FrameDecoder();
    const data = new Uint8Array(MAX_DATA_LENGTH);
    for (let i = 0; i < data.length; i += 1000) data[i] = i % 251;
    const frame = encodeFrame(1, FrameType.Request, 0, data);
    expect(d.push(frame.subarray(0, HEADER_LENGTH))).toEqual([]);
    expect(d.heldBytes).toBe(INITIAL_BODY_BUFFER);
    let at = HEADER_LENGTH;
    for (const step of [100, 10_000, 300_000, 1_000_000]) {
      expect(d.push(frame.subarray(at, at + step))).toEqual([]);
      at += step;
      expect(d.heldBytes).toBeLessThanOrEqual(
        Math.max(INITIAL_BODY_BUFFER, 2 * (at - HEADER_LENGTH)),
      );
    }
    const [out] = d.push(frame.subarray(at));
    expect(out?.kind).toBe("frame");
    expect(out?.kind === "frame" && Buffer.compare(out.data, data)).toBe(0);
    expect(d.heldBytes).toBe(0);
  });
});
