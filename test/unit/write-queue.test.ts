/**
 * WriteQueue, pure: the frames of one turn leave in one write; a partial
 * write keeps the rest and writes it first on drain, in order, without
 * copying it again; nothing is written between a partial write and its
 * drain; bufferedBytes is what the kernel has not taken. The socket is a
 * recorder that takes as many bytes as the test says.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WriteQueue } from "../../src/transport/write-queue";

/** A queue over a fake kernel taking `room()` bytes per write; turns run when `endTurn()` is called. */
function harness(room: () => number = () => Number.POSITIVE_INFINITY) {
  const writes: Uint8Array[] = [];
  const taken: number[] = [];
  let turn: (() => void) | undefined;
  let blockedCalls = 0;
  const q = new WriteQueue(
    (bytes) => {
      writes.push(bytes);
      const n = Math.min(bytes.length, room());
      taken.push(...bytes.subarray(0, Math.max(0, n)));
      return n;
    },
    () => {
      blockedCalls++;
    },
    (fn) => {
      expect(turn, "one flush scheduled per turn").toBeUndefined();
      turn = fn;
    },
  );
  const endTurn = () => {
    const fn = turn;
    turn = undefined;
    fn?.();
  };
  return { q, writes, taken, endTurn, blocked: () => blockedCalls };
}

const bytes = (...v: number[]) => Uint8Array.from(v);

describe("WriteQueue", () => {
  it("writes the frames of one turn together, once the turn ends", () => {
    const h = harness();
    h.q.push(bytes(1, 2));
    h.q.push(bytes(3));
    h.q.push(bytes(4, 5, 6));
    expect(h.writes).toHaveLength(0);
    expect(h.q.bufferedBytes).toBe(6);
    h.endTurn();
    expect(h.writes.map((w) => [...w])).toEqual([[1, 2, 3, 4, 5, 6]]);
    expect(h.q.bufferedBytes).toBe(0);
    h.q.push(bytes(7));
    h.endTurn();
    expect(h.writes.map((w) => [...w])).toEqual([[1, 2, 3, 4, 5, 6], [7]]);
  });

  it("keeps what a partial write left, writes it first on drain, then what came meanwhile", () => {
    let room = 3;
    const h = harness(() => room);
    const big = Uint8Array.from({ length: 10 }, (_, i) => i);
    h.q.push(big);
    h.endTurn();
    expect(h.blocked()).toBe(1);
    expect(h.q.blocked).toBe(true);
    expect(h.q.bufferedBytes).toBe(7);
    // Frames queued while blocked wait for the drain: no write, no flush scheduled.
    h.q.push(bytes(100));
    h.q.push(bytes(101));
    h.endTurn();
    expect(h.writes).toHaveLength(1);
    expect(h.q.bufferedBytes).toBe(9);
    room = 4;
    expect(h.q.drain()).toBe(false);
    // The rest went alone, as a view of the same memory (not copied again).
    expect(h.writes[1]?.buffer).toBe(big.buffer);
    expect(h.q.bufferedBytes).toBe(5);
    room = 100;
    expect(h.q.drain()).toBe(true);
    // The remainder alone, then the two frames of the meantime in one write.
    expect(h.writes.slice(2).map((w) => [...w])).toEqual([
      [7, 8, 9],
      [100, 101],
    ]);
    expect(h.taken).toEqual([...big, 100, 101]);
    expect(h.q.bufferedBytes).toBe(0);
    expect(h.q.blocked).toBe(false);
  });

  it("a closed socket (negative count) takes nothing and loses nothing until cleared", () => {
    const h = harness(() => -1);
    h.q.push(bytes(1, 2, 3));
    h.endTurn();
    expect(h.q.blocked).toBe(true);
    expect(h.q.bufferedBytes).toBe(3);
    h.q.clear();
    expect(h.q.bufferedBytes).toBe(0);
  });

  it("any frames, turns and kernel room: the peer gets every byte once, in order", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            frames: fc.array(fc.uint8Array({ minLength: 0, maxLength: 40 }), { maxLength: 6 }),
            room: fc.array(fc.integer({ min: -1, max: 60 }), { minLength: 1, maxLength: 8 }),
          }),
          { maxLength: 12 },
        ),
        (turns) => {
          let rooms: number[] = [];
          const h = harness(() => rooms.shift() ?? 0);
          const sent: number[] = [];
          for (const t of turns) {
            rooms = [...t.room];
            const writesBefore = h.writes.length;
            for (const f of t.frames) {
              h.q.push(f);
              sent.push(...f);
            }
            const wasBlocked = h.q.blocked;
            h.endTurn();
            // Blocked: nothing is written until the drain.
            if (wasBlocked) expect(h.writes.length).toBe(writesBefore);
            else expect(h.writes.length - writesBefore).toBeLessThanOrEqual(1);
            if (h.q.blocked) h.q.drain();
            expect(h.q.bufferedBytes).toBe(sent.length - h.taken.length);
          }
          // Drain everything with plenty of room.
          while (h.q.bufferedBytes > 0) {
            rooms = [1000];
            h.q.drain();
            h.endTurn();
          }
          expect(h.taken).toEqual(sent);
        },
      ),
      { numRuns: 500 },
    );
  });
});
