/**
 * ServerConnection, pure (test/helpers/server-harness.ts): one test per
 * row of the error table, each answered on its stream with the connection
 * going on: unknown names, undecodable input, sizes, stream ids and stray
 * frames, a handler that answers nothing.
 */

import { describe, expect, it } from "vitest";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { encodeFrame, FrameType, HEADER_LENGTH, MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import { deferred, harness, SERVING } from "../helpers/server-harness";

describe("ServerConnection: the error table", () => {
  it("unknown service -> UNIMPLEMENTED 'service X'", async () => {
    const h = harness();
    h.send(1, { service: "grpc.Nope" });
    await h.conn.drain();
    expect(h.answers[0]).toMatchObject({
      streamId: 1,
      code: Code.UNIMPLEMENTED,
      message: "service grpc.Nope",
    });
  });

  it("unknown method -> UNIMPLEMENTED 'method X', also for a method the impl leaves out", async () => {
    const h = harness({ check: () => SERVING });
    h.send(1, { method: "Nope" });
    h.send(3, { method: "Version" });
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [1, Code.UNIMPLEMENTED, "method Nope"],
      [3, Code.UNIMPLEMENTED, "method Version"],
    ]);
  });

  it("undecodable Request -> INVALID_ARGUMENT on that stream; later calls work", async () => {
    const h = harness();
    // Field 1 (service) claims 100 bytes, 1 follows: truncated.
    h.conn.receive(encodeFrame(1, FrameType.Request, 0, Uint8Array.of(0x0a, 100, 0x41)));
    // Wire type 7 does not exist.
    h.conn.receive(encodeFrame(3, FrameType.Request, 0, Uint8Array.of(0x0f, 0x00)));
    h.send(5);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.INVALID_ARGUMENT],
      [3, Code.INVALID_ARGUMENT],
      [5, Code.OK],
    ]);
    expect(h.answers[0]?.message).toMatch(/^unmarshal request error: /);
  });

  it("undecodable payload -> INVALID_ARGUMENT naming the message type", async () => {
    const h = harness();
    h.send(1, { payload: Uint8Array.of(0x0a, 50) });
    await h.conn.drain();
    expect(h.answers[0]?.code).toBe(Code.INVALID_ARGUMENT);
    expect(h.answers[0]?.message).toContain("grpc.CheckRequest");
  });

  it.each([
    [
      "a TtrpcError keeps its code",
      new TtrpcError("Link not found", Code.NOT_FOUND),
      5,
      "Link not found",
    ],
    ["a plain Error is UNKNOWN with its message", new Error("boom"), Code.UNKNOWN, "boom"],
    ["a thrown string is UNKNOWN", "just text", Code.UNKNOWN, "just text"],
    [
      "a TimeoutError is DEADLINE_EXCEEDED",
      new DOMException("took too long", "TimeoutError"),
      Code.DEADLINE_EXCEEDED,
      "took too long",
    ],
    ["an AbortError is CANCELLED", new DOMException("gone", "AbortError"), Code.CANCELLED, "gone"],
  ])("handler error -> status: %s", async (_name, thrown, code, message) => {
    const h = harness({
      check: () => {
        throw thrown;
      },
      version: async () => {
        throw thrown;
      },
    });
    h.send(1);
    h.send(3, { method: "Version" });
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [1, code, message],
      [3, code, message],
    ]);
    // A failed call carries no payload.
    expect(h.answers.every((a) => a.payload.length === 0)).toBe(true);
  });

  it("a handler returning nothing -> INTERNAL, not a crash", async () => {
    const h = harness({ check: () => undefined as unknown as typeof SERVING });
    h.send(1);
    await h.conn.drain();
    expect(h.answers[0]?.code).toBe(Code.INTERNAL);
  });
});

describe("ServerConnection: the error table, sizes", () => {
  it("oversize frame -> RESOURCE_EXHAUSTED on that stream, body discarded, connection kept", async () => {
    const h = harness();
    const header = new Uint8Array(HEADER_LENGTH);
    const view = new DataView(header.buffer);
    view.setUint32(0, MAX_DATA_LENGTH + 1);
    view.setUint32(4, 1);
    header[8] = FrameType.Request;
    h.conn.receive(header);
    // The status goes out as soon as the header is read; the body is skipped.
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [
        1,
        Code.RESOURCE_EXHAUSTED,
        `message length ${MAX_DATA_LENGTH + 1} exceed maximum message size of ${MAX_DATA_LENGTH}`,
      ],
    ]);
    // The body (which looks like frames, to prove it is not parsed) in pieces.
    const junk = new Uint8Array(MAX_DATA_LENGTH + 1);
    const fake = h.request(99);
    for (let off = 0; off + fake.length < junk.length; off += 65_536) junk.set(fake, off);
    for (let off = 0; off < junk.length; off += 1_000_003) {
      h.conn.receive(junk.subarray(off, off + 1_000_003));
    }
    expect(h.conn.partialFrame).toBe(false);
    h.send(3);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.RESOURCE_EXHAUSTED],
      [3, Code.OK],
    ]);
  });

  it("an answer over 4 MiB -> RESOURCE_EXHAUSTED instead, and the connection goes on", async () => {
    const h = harness({
      check: () => SERVING,
      version: () => ({ agentVersion: "x".repeat(MAX_DATA_LENGTH), grpcVersion: "0.0.1" }),
    });
    h.send(1, { method: "Version" });
    h.send(3);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual(
      expect.arrayContaining([
        [1, Code.RESOURCE_EXHAUSTED],
        [3, Code.OK],
      ]),
    );
    expect(h.byStream(1)?.message).toMatch(/exceed maximum message size of 4194304/);
    expect(h.writes.every((w) => w.length <= HEADER_LENGTH + MAX_DATA_LENGTH)).toBe(true);
  });

  it("a frame of exactly 4 MiB is read and served", async () => {
    const h = harness();
    // Envelope overhead for grpc.Health/Check with a payload of length P
    // (4-byte varint): 13 + 7 + 1 + 4 = 25 bytes; the payload is one
    // unknown bytes field 15 (7a, 4-byte length), which decoders skip.
    const payload = new Uint8Array(MAX_DATA_LENGTH - 25);
    payload[0] = 0x7a;
    const len = payload.length - 5;
    payload.set(
      [(len & 0x7f) | 0x80, ((len >> 7) & 0x7f) | 0x80, ((len >> 14) & 0x7f) | 0x80, len >> 21],
      1,
    );
    const frame = h.request(1, { payload });
    expect(frame.length).toBe(HEADER_LENGTH + MAX_DATA_LENGTH);
    h.conn.receive(frame);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([[1, Code.OK]]);
  });
});

describe("ServerConnection: the error table, stream ids and stray frames", () => {
  it("even stream id -> INVALID_ARGUMENT on that stream; the connection goes on", async () => {
    const h = harness();
    h.send(2);
    h.send(0);
    h.send(1);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code, a.message])).toEqual([
      [2, Code.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams"],
      [0, Code.INVALID_ARGUMENT, "StreamID must be odd for client initiated streams"],
      [1, Code.OK, ""],
    ]);
  });

  it("a stream id not above the last -> INVALID_ARGUMENT; later increasing ids work", async () => {
    const h = harness();
    h.send(5);
    await h.conn.drain();
    h.send(5);
    h.send(3);
    h.send(7);
    h.send(7);
    h.send(0xffff_ffff);
    await h.conn.drain();
    const reuse = "StreamID cannot be re-used and must increment";
    // Rejections are written at once, answers when the call completes: compare as sets.
    const rows = h.answers.map((a) => [a.streamId, a.code, a.message]);
    expect(rows).toHaveLength(6);
    expect(rows).toEqual(
      expect.arrayContaining([
        [5, Code.OK, ""],
        [5, Code.INVALID_ARGUMENT, reuse],
        [3, Code.INVALID_ARGUMENT, reuse],
        [7, Code.OK, ""],
        [7, Code.INVALID_ARGUMENT, reuse],
        [0xffff_ffff, Code.OK, ""],
      ]),
    );
  });

  it("Data frames on unary streams, stray Responses and unknown frame types are ignored", async () => {
    const gate = deferred<void>();
    const h = harness({
      check: async () => {
        await gate.promise;
        return SERVING;
      },
    });
    h.send(1);
    // Data on the in-flight unary stream, with and without close flags.
    h.conn.receive(encodeFrame(1, FrameType.Data, 0, Uint8Array.of(1, 2)));
    h.conn.receive(encodeFrame(1, FrameType.Data, 0x5, new Uint8Array()));
    h.conn.receive(encodeFrame(1, FrameType.Data, 0x1, Uint8Array.of(3)));
    // Data on unknown streams, a stray Response, unknown types 0, 4 and 0xff.
    h.conn.receive(encodeFrame(9, FrameType.Data, 0, Uint8Array.of(1)));
    h.conn.receive(encodeFrame(11, FrameType.Response, 0, Uint8Array.of(0x0a, 0x00)));
    for (const type of [0, 4, 0xff]) {
      h.conn.receive(encodeFrame(13, type as FrameType, 0xff, Uint8Array.of(0xff, 0xff)));
    }
    expect(h.answers).toHaveLength(0);
    gate.resolve();
    await h.conn.drain();
    h.send(3);
    await h.conn.drain();
    expect(h.answers.map((a) => [a.streamId, a.code])).toEqual([
      [1, Code.OK],
      [3, Code.OK],
    ]);
  });
});
