/**
 * The native-socket channel on a real unix socket (listenUnix), against a
 * node:net peer: answers past what the kernel takes wait in order and
 * reading from the peer pauses until it drains; EOF from the peer lets
 * queued answers out first; a refused connection sees EOF and no reset;
 * close() closes and `closed` comes once.
 */
import { connect, type Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { ByteChannel, ChannelSink } from "../../src/transport/channel";
import { listenUnix } from "../../src/transport/socket-listener";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface Served {
  channel: ByteChannel;
  received: Uint8Array[];
  writable: number;
  closed: number;
}

/** Listens in a temp dir; `refuse` refuses every connection. */
async function serve(refuse = false): Promise<{ path: string; served: Served[] }> {
  const dir = tempDir("netagent-chan-");
  cleanup.push(() => dir.remove());
  const path = dir.join("s");
  const served: Served[] = [];
  const listener = await listenUnix(path, (channel): ChannelSink | undefined => {
    if (refuse) return undefined;
    const s: Served = { channel, received: [], writable: 0, closed: 0 };
    served.push(s);
    return {
      receive: (chunk) => s.received.push(chunk),
      writable: () => s.writable++,
      closed: () => s.closed++,
    };
  });
  cleanup.push(() => listener.close());
  return { path, served };
}

async function peer(path: string, allowHalfOpen = false): Promise<Socket> {
  const s = connect({ path, allowHalfOpen });
  cleanup.push(() => s.destroy());
  await new Promise<void>((resolve, reject) => {
    s.once("connect", resolve);
    s.once("error", reject);
  });
  return s;
}

/** 8 MiB in 32 frames of 256 KiB, byte i of the stream = i mod 251. */
function answers(): Uint8Array[] {
  const frame = 256 * 1024;
  return Array.from({ length: 32 }, (_, k) =>
    Uint8Array.from({ length: frame }, (_, i) => (k * frame + i) % 251),
  );
}

it("a peer not reading: answers wait in order, reading pauses, all arrive once it reads", async () => {
  const { path, served } = await serve();
  const client = await peer(path);
  client.pause();
  await waitFor(() => served.length === 1, { what: "the connection" });
  const s = served[0] as Served;
  for (const a of answers()) s.channel.write(a);
  // Far more than a unix socket's kernel buffer: the rest waits with us.
  await waitFor(
    () => (s.channel.bufferedBytes ?? 0) > 0 && (s.channel.bufferedBytes ?? 0) < 8 << 20,
    {
      what: "a partial write",
    },
  );
  // not a wait: time for the kernel to take what it will; what waits with us must stay over 4 MiB
  await new Promise((r) => setTimeout(r, 100));
  const waiting = s.channel.bufferedBytes ?? 0;
  expect(waiting).toBeGreaterThan(4 << 20);
  // Reading is paused while answers wait: a request sent now is not read.
  client.write("request");
  // not a wait: a stretch in which nothing may be read while answers wait
  await new Promise((r) => setTimeout(r, 200));
  expect(s.received).toEqual([]);
  expect(s.writable).toBe(0);
  const got: Buffer[] = [];
  client.on("data", (d: Buffer) => got.push(d));
  client.resume();
  await waitFor(() => got.reduce((n, b) => n + b.length, 0) === 8 << 20, {
    what: "every answer byte",
  });
  const all = Buffer.concat(got);
  let bad = -1;
  for (let i = 0; i < all.length && bad < 0; i++) if (all[i] !== i % 251) bad = i;
  expect(bad).toBe(-1);
  await waitFor(() => s.writable > 0, { what: "writable after the drain" });
  expect(s.channel.bufferedBytes).toBe(0);
  await waitFor(() => Buffer.concat(s.received).toString() === "request", {
    what: "reading to resume",
  });
  expect(s.closed).toBe(0);
});

it("EOF from the peer: answers already queued still go out, then the connection closes", async () => {
  const { path, served } = await serve();
  const client = await peer(path);
  client.pause();
  await waitFor(() => served.length === 1, { what: "the connection" });
  const s = served[0] as Served;
  for (const a of answers()) s.channel.write(a);
  await waitFor(
    () => (s.channel.bufferedBytes ?? 0) > 0 && (s.channel.bufferedBytes ?? 0) < 8 << 20,
    {
      what: "a partial write",
    },
  );
  // Half-close; the agent sees the EOF only once it reads again.
  client.end();
  let total = 0;
  client.on("data", (d: Buffer) => {
    total += d.length;
  });
  const ended = new Promise<void>((r) => client.once("end", r));
  client.resume();
  await ended;
  expect(total).toBe(8 << 20);
  await waitFor(() => s.closed === 1, { what: "closed" });
  // Written after the EOF: dropped, never an error.
  s.channel.write(Uint8Array.of(1));
  // not a wait: a stretch in which a second close must not be reported
  await new Promise((r) => setTimeout(r, 50));
  expect(s.closed).toBe(1);
});

it("refused: the peer sees EOF, no reset, though it sent a request first", async () => {
  const { path } = await serve(true);
  // Half-open: the peer keeps sending after our EOF until it chooses to end.
  const client = await peer(path, true);
  const errors: Error[] = [];
  client.on("error", (e) => errors.push(e));
  const closed = new Promise<void>((r) => client.once("close", r));
  let got = 0;
  client.on("data", (d: Buffer) => {
    got += d.length;
  });
  client.write(new Uint8Array(5000));
  // A reset shows as an error and a close without EOF.
  const eof = await new Promise<boolean>((r) => {
    client.once("end", () => r(true));
    client.once("close", () => r(false));
  });
  expect(errors).toEqual([]);
  expect(eof).toBe(true);
  // Still sending after the EOF: dropped, not answered with a reset.
  client.write(new Uint8Array(5000));
  // not a wait: time for bytes sent after the EOF to arrive, which must be dropped without a reset
  await new Promise((r) => setTimeout(r, 100));
  client.end();
  await closed;
  expect(errors).toEqual([]);
  expect(got).toBe(0);
});

it("request and EOF together: the answer written on reading it still goes out", async () => {
  const dir = tempDir("netagent-chan-");
  cleanup.push(() => dir.remove());
  const path = dir.join("s");
  const listener = await listenUnix(path, (channel) => ({
    // Answers in the turn it reads, as a call answered at once would.
    receive: (chunk) => channel.write(Uint8Array.from(chunk, (b) => b + 1)),
    closed: () => {},
  }));
  cleanup.push(() => listener.close());
  for (let round = 0; round < 20; round++) {
    const client = await peer(path, true);
    const got: Buffer[] = [];
    client.on("data", (d: Buffer) => got.push(d));
    const ended = new Promise<void>((r) => client.once("end", r));
    client.end(Uint8Array.of(1, 2, 3));
    await ended;
    expect([...Buffer.concat(got)]).toEqual([2, 3, 4]);
    client.destroy();
  }
});

it("close(): the peer sees the connection end; closed comes once", async () => {
  const { path, served } = await serve();
  const client = await peer(path);
  await waitFor(() => served.length === 1, { what: "the connection" });
  const s = served[0] as Served;
  const gone = new Promise<void>((r) => client.once("close", r));
  s.channel.close();
  s.channel.close();
  await gone;
  await waitFor(() => s.closed === 1, { what: "closed" });
  // not a wait: a stretch in which a second close must not be reported
  await new Promise((r) => setTimeout(r, 50));
  expect(s.closed).toBe(1);
});
