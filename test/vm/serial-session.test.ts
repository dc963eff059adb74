import { describe, expect, it } from "vitest";
import { HostSessionSplitter } from "../../src/transport/serial";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";

const req = (id: number, size = 5) =>
  encodeFrame(id, FrameType.Request, 0, new Uint8Array(size).fill(id));

/** Feeds `bytes` in pieces of `step` and returns the sessions as byte arrays. */
function sessions(bytes: Uint8Array, step: number): number[][] {
  const splitter = new HostSessionSplitter();
  const out: number[][] = [[]];
  for (let i = 0; i < bytes.length; i += step) {
    for (const part of splitter.split(bytes.slice(i, i + step))) {
      if (part.fresh) out.push([]);
      out.at(-1)?.push(...part.bytes);
    }
  }
  return out;
}

const cat = (...xs: Uint8Array[]) => [...Buffer.concat(xs)];

describe("HostSessionSplitter", () => {
  const one = [req(1), req(3), req(5, 300)];
  const two = [req(1, 0), req(3)];

  it.each([1, 2, 3, 7, 10, 11, 64, 4096])(
    "starts a new session at a second stream 1, fed %i bytes at a time",
    (step) => {
      expect(sessions(Buffer.concat([...one, ...two]), step)).toEqual([cat(...one), cat(...two)]);
    },
  );

  it("leaves one session alone, however it is cut", () => {
    for (const step of [1, 9, 10, 4096]) {
      expect(sessions(Buffer.concat(one), step)).toEqual([cat(...one)]);
    }
  });

  it("does not mistake data that looks like a header for one", () => {
    // The body of stream 3 holds the bytes of a stream-1 request header.
    const tricky = encodeFrame(3, FrameType.Request, 0, req(1));
    const stream = Buffer.concat([req(1), tricky]);
    expect(sessions(stream, 4096)).toEqual([cat(req(1), tricky)]);
  });

  it("only a request restarts: a response or data frame on stream 1 does not", () => {
    const stream = Buffer.concat([req(1), encodeFrame(1, FrameType.Data, 0, new Uint8Array(2))]);
    expect(sessions(stream, 4096)).toHaveLength(1);
  });
});
