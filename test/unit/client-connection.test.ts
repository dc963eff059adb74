/**
 * ClientConnection, pure: frames out through `write`, bytes in through
 * receive(). What it writes is decoded with protobufjs; answers are
 * encoded with protobufjs, independently of our generated code.
 */
import { describe, expect, it } from "vitest";
import { ClientConnection } from "../../src/ttrpc/client-connection";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import {
  type DecodedFrame,
  encodeFrame,
  FrameDecoder,
  FrameType,
  HEADER_LENGTH,
  MAX_DATA_LENGTH,
} from "../../src/ttrpc/frame";
import { pbDecodeRequest, pbEncodeResponse } from "../helpers/envelope-pbjs";

function harness() {
  const decoder = new FrameDecoder();
  const sent: (DecodedFrame & { kind: "frame" })[] = [];
  const conn = new ClientConnection((bytes) => {
    const frames = decoder.push(bytes);
    // One write, one whole frame.
    expect(frames).toHaveLength(1);
    expect(decoder.pending).toBe(false);
    sent.push(frames[0] as DecodedFrame & { kind: "frame" });
  });
  const reply = (streamId: number, res: Parameters<typeof pbEncodeResponse>[0]) =>
    conn.receive(encodeFrame(streamId, FrameType.Response, 0, pbEncodeResponse(res)));
  const request = (i: number) => pbDecodeRequest((sent[i] as { data: Uint8Array }).data);
  return { conn, sent, reply, request };
}

const OK = { status: { code: 0, message: "" } };

describe("ClientConnection: requests on the wire", () => {
  it("gives concurrent calls odd, strictly increasing stream ids in write order", async () => {
    const h = harness();
    const calls = Array.from({ length: 200 }, (_, i) =>
      h.conn.call("svc", `M${i}`, Uint8Array.of(i & 0xff)),
    );
    expect(h.sent.map((f) => f.streamId)).toEqual(Array.from({ length: 200 }, (_, i) => 2 * i + 1));
    expect(h.sent.every((f) => f.type === FrameType.Request && f.flags === 0)).toBe(true);
    expect(h.request(7)).toMatchObject({ service: "svc", method: "M7", payload: Uint8Array.of(7) });
    // Answer in reverse order; each call gets its own payload.
    for (let i = 199; i >= 0; i--) h.reply(2 * i + 1, { ...OK, payload: Uint8Array.of(i & 0xff) });
    const results = await Promise.all(calls);
    expect(results.map((p) => p[0])).toEqual(Array.from({ length: 200 }, (_, i) => i & 0xff));
    expect(h.conn.activeCalls).toBe(0);
  });

  it("keeps ids increasing across completed calls", async () => {
    const h = harness();
    const a = h.conn.call("s", "m", new Uint8Array());
    h.reply(1, OK);
    await a;
    const b = h.conn.call("s", "m", new Uint8Array());
    h.reply(3, OK);
    await b;
    expect(h.sent.map((f) => f.streamId)).toEqual([1, 3]);
  });

  it("sends the deadline as timeout_nano, and 0 without one", async () => {
    const h = harness();
    void h.conn.call("s", "m", new Uint8Array(), { timeoutMs: 1500 }).catch(() => {});
    void h.conn.call("s", "m", new Uint8Array()).catch(() => {});
    void h.conn.call("s", "m", new Uint8Array(), { timeoutMs: 0.25 }).catch(() => {});
    expect(h.request(0).timeoutNano).toBe(1_500_000_000n);
    expect(h.request(1).timeoutNano).toBe(0n);
    expect(h.request(2).timeoutNano).toBe(250_000n);
    h.conn.close();
  });

  it("sends metadata as repeated KeyValue pairs", () => {
    const h = harness();
    void h.conn
      .call("s", "m", new Uint8Array(), { metadata: { a: "1", b: ["2", "3"] } })
      .catch(() => {});
    expect(h.request(0).metadata).toEqual([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
      { key: "b", value: "3" },
    ]);
    h.conn.close();
  });

  it("refuses to wrap stream ids past 2^32-1", async () => {
    const h = harness();
    (h.conn as unknown as { nextStreamId: number }).nextStreamId = 0xffff_fffd;
    const a = h.conn.call("s", "m", new Uint8Array());
    const b = h.conn.call("s", "m", new Uint8Array());
    await expect(h.conn.call("s", "m", new Uint8Array())).rejects.toMatchObject({
      code: Code.RESOURCE_EXHAUSTED,
    });
    expect(h.sent.map((f) => f.streamId)).toEqual([0xffff_fffd, 0xffff_ffff]);
    h.reply(0xffff_fffd, OK);
    h.reply(0xffff_ffff, OK);
    await Promise.all([a, b]);
  });
});

describe("ClientConnection: answers", () => {
  it("turns an error status into a TtrpcError with that code and message", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array());
    h.reply(1, { status: { code: Code.NOT_FOUND, message: "Link not found" } });
    await expect(call).rejects.toBeInstanceOf(TtrpcError);
    await expect(call).rejects.toMatchObject({ code: Code.NOT_FOUND, message: "Link not found" });
  });

  it("treats an absent status as OK, as Go's client does", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array());
    h.reply(1, { payload: Uint8Array.of(8, 1) });
    expect([...(await call)]).toEqual([8, 1]);
  });

  it("takes an answer split at every byte", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array());
    const bytes = encodeFrame(
      1,
      FrameType.Response,
      0,
      pbEncodeResponse({ ...OK, payload: Uint8Array.of(5) }),
    );
    for (let i = 0; i < bytes.length; i++) h.conn.receive(bytes.subarray(i, i + 1));
    expect([...(await call)]).toEqual([5]);
  });

  it("ignores stray answers, Data frames and unknown types; fails an undecodable one", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array());
    h.reply(99, OK);
    h.conn.receive(encodeFrame(1, FrameType.Data, 0, Uint8Array.of(1)));
    h.conn.receive(encodeFrame(1, 0x7f as FrameType, 0, Uint8Array.of(1)));
    expect(h.conn.activeCalls).toBe(1);
    h.conn.receive(encodeFrame(1, FrameType.Response, 0, Uint8Array.of(0x0a, 50)));
    await expect(call).rejects.toMatchObject({ code: Code.INTERNAL });
  });

  it("fails only the stream an oversize answer is for", async () => {
    const h = harness();
    const a = h.conn.call("s", "m", new Uint8Array());
    const b = h.conn.call("s", "m", new Uint8Array());
    const header = new Uint8Array(HEADER_LENGTH);
    new DataView(header.buffer).setUint32(0, MAX_DATA_LENGTH + 1);
    new DataView(header.buffer).setUint32(4, 1);
    header[8] = FrameType.Response;
    h.conn.receive(header);
    h.conn.receive(new Uint8Array(MAX_DATA_LENGTH + 1));
    h.reply(3, OK);
    await expect(a).rejects.toMatchObject({ code: Code.RESOURCE_EXHAUSTED });
    await expect(b).resolves.toBeInstanceOf(Uint8Array);
  });
});

describe("ClientConnection: deadlines, cancellation, close", () => {
  it("fails a call with DEADLINE_EXCEEDED at its deadline and ignores the late answer", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array(), { timeoutMs: 10 });
    await expect(call).rejects.toMatchObject({ code: Code.DEADLINE_EXCEEDED });
    expect(h.conn.activeCalls).toBe(0);
    h.reply(1, OK);
  });

  it("does not expire a deadline longer than a timer can hold", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array(), { timeoutMs: 30 * 24 * 3600 * 1000 });
    // not a wait: a stretch in which an overflowed (clamped) timer would have fired: the call must still be active
    await new Promise((r) => setTimeout(r, 20));
    expect(h.conn.activeCalls).toBe(1);
    h.reply(1, OK);
    await expect(call).resolves.toBeInstanceOf(Uint8Array);
  });

  it("fails a call whose signal aborts with CANCELLED, and refuses an aborted signal", async () => {
    const h = harness();
    const ac = new AbortController();
    const call = h.conn.call("s", "m", new Uint8Array(), { signal: ac.signal });
    ac.abort();
    await expect(call).rejects.toMatchObject({ code: Code.CANCELLED });
    await expect(
      h.conn.call("s", "m", new Uint8Array(), { signal: ac.signal }),
    ).rejects.toMatchObject({ code: Code.CANCELLED });
    expect(h.sent).toHaveLength(1);
  });

  it("fails every pending call when closed, and every later call", async () => {
    const h = harness();
    const calls = Array.from({ length: 5 }, () => h.conn.call("s", "m", new Uint8Array()));
    h.conn.close();
    for (const c of calls) await expect(c).rejects.toMatchObject({ code: Code.UNAVAILABLE });
    expect(h.conn.closed).toBe(true);
    expect(h.conn.activeCalls).toBe(0);
    await expect(h.conn.call("s", "m", new Uint8Array())).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
    });
    expect(h.sent).toHaveLength(5);
  });

  it("closes with the transport's error as cause", async () => {
    const h = harness();
    const call = h.conn.call("s", "m", new Uint8Array());
    const reason = new Error("read ECONNRESET");
    h.conn.close(reason);
    await expect(call).rejects.toMatchObject({ code: Code.UNAVAILABLE, cause: reason });
  });

  it("fails a call whose write throws with UNAVAILABLE", async () => {
    const conn = new ClientConnection(() => {
      throw new Error("EPIPE");
    });
    await expect(conn.call("s", "m", new Uint8Array())).rejects.toMatchObject({
      code: Code.UNAVAILABLE,
    });
    expect(conn.activeCalls).toBe(0);
  });
});
