/** progress: a redrawn line on a terminal, silence when piped. */
import { describe, expect, it } from "vitest";
import { createProgress, quietProgress } from "../../../src/host/print/progress";

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, columns: 40, writes, write: (t: string) => writes.push(t) };
}

describe("createProgress", () => {
  it("is quiet when the stream is not a terminal", () => {
    const s = stream(false);
    const p = createProgress(s);
    expect(p).toBe(quietProgress);
    p.update("waiting");
    p.clear();
    expect(s.writes).toEqual([]);
  });

  it("redraws one line in place on a terminal, truncated to the width, and clears it", () => {
    const s = stream(true);
    let t = 0;
    const p = createProgress(s, { now: () => t });
    p.update("waiting for link eth0");
    t += 100;
    p.update("x".repeat(100));
    p.clear();
    p.clear();
    expect(s.writes).toEqual([
      "\r\x1b[2K| waiting for link eth0",
      `\r\x1b[2K/ ${"x".repeat(35)}`,
      "\r\x1b[2K",
    ]);
  });

  it("throttles repeats of the same text", () => {
    const s = stream(true);
    let t = 0;
    const p = createProgress(s, { now: () => t, minIntervalMs: 80 });
    p.update("a");
    t += 10;
    p.update("a");
    t += 100;
    p.update("a");
    expect(s.writes).toHaveLength(2);
  });
});
