/**
 * The agent's bounds, pure: calls per connection (reading pauses at the
 * cap and resumes), the log's rate and value limits, and the peer rules
 * (answers read too slowly; idleness).
 */
import { describe, expect, it } from "vitest";
import { isIdle, judgePeer, newWatch } from "../../src/agent/server/peer-watch";
import { createLogger } from "../../src/common/log";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import type { ByteChannel } from "../../src/transport/channel";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";
import { ServerConnection, TURN_BUDGET } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { pbEncodeRequest } from "../helpers/envelope-pbjs";
import { waitFor } from "../helpers/wait";

const SERVING = { status: HealthCheckResponse_ServingStatus.SERVING };
const check = (id: number) =>
  encodeFrame(
    id,
    FrameType.Request,
    0,
    pbEncodeRequest({ service: "grpc.Health", method: "Check" }),
  );

describe("calls per connection", () => {
  it("runs at most maxInFlight at once, asks the transport to pause, and resumes when calls end", async () => {
    let entered = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const busy: boolean[] = [];
    let answered = 0;
    const conn = new ServerConnection({
      registry: new ServiceRegistry().register(Health, {
        check: async () => {
          entered++;
          await gate;
          return SERVING;
        },
      }),
      write: () => {
        answered++;
      },
      onBusy: (b) => busy.push(b),
      maxInFlight: 4,
    });
    conn.receive(Buffer.concat(Array.from({ length: 100 }, (_, i) => check(2 * i + 1))));
    await waitFor(() => entered >= 4 && conn.backlogged, { what: "four calls in, the rest held" });
    expect(entered).toBe(4);
    expect(conn.activeCalls).toBe(4);
    expect(conn.backlogged).toBe(true);
    expect(busy).toEqual([true]);
    release();
    await conn.drain();
    expect(answered).toBe(100);
    expect(busy).toEqual([true, false]);
    expect(conn.backlogged).toBe(false);
  });
});

describe("requests per turn", () => {
  it(`a read of 2,000 Checks answered at once: ${TURN_BUDGET} in the read's turn, the rest on later turns, reading paused meanwhile`, async () => {
    let answered = 0;
    const busy: boolean[] = [];
    const conn = new ServerConnection({
      registry: new ServiceRegistry().register(Health, { check: () => SERVING }),
      write: () => {
        answered++;
      },
      onBusy: (b) => busy.push(b),
    });
    const n = 2000;
    conn.receive(Buffer.concat(Array.from({ length: n }, (_, i) => check(2 * i + 1))));
    // Handlers that do not wait are answered within the read, up to the budget.
    expect(answered).toBe(TURN_BUDGET);
    expect(busy).toEqual([true]);
    // The rest on later turns (setImmediate), a budget at a time, so other
    // connections' reads come in between.
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(2 * TURN_BUDGET);
    await conn.drain();
    expect(answered).toBe(n);
    expect(busy).toEqual([true, false]);
  });
});

describe("answers unread by the peer", () => {
  it("no call starts while canStart says the peer's backlog is too large; writable() resumes", async () => {
    let blocked = true;
    let entered = 0;
    let answered = 0;
    const conn = new ServerConnection({
      registry: new ServiceRegistry().register(Health, {
        check: () => {
          entered++;
          return SERVING;
        },
      }),
      write: () => {
        answered++;
      },
      canStart: () => !blocked,
    });
    conn.receive(Buffer.concat(Array.from({ length: 10 }, (_, i) => check(2 * i + 1))));
    // not a wait: a stretch in which nothing may start (canStart is false)
    await new Promise((r) => setTimeout(r, 20));
    expect([entered, answered, conn.backlogged]).toEqual([0, 0, true]);
    // Requests held back do not hold a drain (shutdown would wait for a deaf peer).
    await conn.drain();
    blocked = false;
    conn.writable();
    await conn.drain();
    expect([entered, answered, conn.backlogged]).toEqual([10, 10, false]);
  });
});

describe("log limits", () => {
  it("cuts long values and rate-limits repeated messages with a suppressed count", () => {
    const lines: string[] = [];
    let t = 0;
    const log = createLogger("info", (l) => lines.push(l), {
      linesPerSec: 10,
      burst: 5,
      now: () => t,
    });
    log.info("call failed", { message: "\\".repeat(2_000_000) });
    expect(lines[0]?.length).toBeLessThan(2048);
    expect(JSON.parse(lines[0] as string).message).toMatch(/… \(2000000 bytes\)$/);
    for (let i = 0; i < 99; i++) log.info("call failed", { i });
    expect(lines).toHaveLength(5);
    log.info("another message");
    expect(lines).toHaveLength(6);
    t = 1000; // ten more tokens, kept up to the burst (5)
    log.info("call failed", { i: 100 });
    const report = JSON.parse(lines[6] as string);
    expect([report.msg, report.of, report.suppressed]).toEqual([
      "log lines suppressed",
      "call failed",
      95,
    ]);
    expect(JSON.parse(lines[7] as string).i).toBe(100);
    for (let i = 0; i < 50; i++) log.info("call failed");
    log.flush();
    expect(JSON.parse(lines.at(-1) as string).suppressed).toBe(46);
  });
});

describe("peer rules", () => {
  function fakePeer() {
    const channel = { buffered: 0 } as unknown as ByteChannel & { buffered: number };
    Object.defineProperty(channel, "bufferedBytes", { get: () => channel.buffered });
    const conn = new ServerConnection({ registry: new ServiceRegistry(), write: () => {} });
    return { channel, conn, watch: newWatch(channel, 0) };
  }
  const limits = { stallTimeoutMs: 1000, minReadBytesPerSec: 4096 };

  it("a peer taking one byte a sweep is stalled ('read too slowly'); one taking a lot is not", () => {
    const p = fakePeer();
    p.watch.written = 100_000;
    p.channel.buffered = 100_000;
    let reason: string | undefined;
    for (let t = 0; t <= 3000 && !reason; t += 250) {
      p.channel.buffered -= 1;
      reason = judgePeer(p.watch, p.conn, t, limits);
    }
    expect(reason).toBe("answers read too slowly");
    const q = fakePeer();
    q.watch.written = 1_000_000;
    q.channel.buffered = 1_000_000;
    for (let t = 0; t <= 5000; t += 250) {
      q.channel.buffered -= 2000; // 8 KB/s
      expect(judgePeer(q.watch, q.conn, t, limits)).toBeUndefined();
    }
    const deaf = fakePeer();
    deaf.watch.written = deaf.channel.buffered = 10;
    judgePeer(deaf.watch, deaf.conn, 0, limits);
    expect(judgePeer(deaf.watch, deaf.conn, 1500, limits)).toBe("answers left unread");
  });

  it("idle: nothing in flight, nothing half-sent, nothing unread", () => {
    const p = fakePeer();
    expect(isIdle(p.watch, p.conn)).toBe(true);
    p.channel.buffered = 5;
    expect(isIdle(p.watch, p.conn)).toBe(false);
    p.channel.buffered = 0;
    p.conn.receive(check(1).subarray(0, 12));
    expect(isIdle(p.watch, p.conn)).toBe(false);
  });
});
