/**
 * Garbage robustness smoke: 10,000 random byte strings and truncated or
 * malformed frames thrown at dist/netagent over many connections. The agent
 * must stay up, keep its memory bounded and still answer Check.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameType, HEADER_LENGTH } from "../../src/ttrpc/frame";
import { startAgent } from "../helpers/agent";
import { pbEncodeRequest } from "../helpers/envelope-pbjs";
import { goClient, goPrograms } from "../helpers/go";

/** A small deterministic PRNG (mulberry32), so a failure can be replayed by seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function garbage(rand: () => number, i: number): Uint8Array {
  const int = (n: number) => Math.floor(rand() * n);
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
  const check = encodeFrame(
    2 * int(1000) + 1,
    FrameType.Request,
    0,
    pbEncodeRequest({ service: "grpc.Health", method: "Check", timeoutNano: int(1e9) }),
  );
  switch (i % 6) {
    case 0: // random bytes
      return bytes(1 + int(200));
    case 1: // a valid frame cut short
      return check.subarray(0, int(check.length));
    case 2: // a valid header, random body of the declared length
      {
        const body = bytes(int(100));
        return encodeFrame(int(2 ** 32), int(256) as FrameType, int(256), body);
      }
    case 3: // a Request frame whose body is random
      return encodeFrame(2 * int(1000) + 1, FrameType.Request, 0, bytes(int(100)));
    case 4: // an oversize or huge length with a few bytes of body
      {
        const h = new Uint8Array(HEADER_LENGTH + int(50));
        new DataView(h.buffer).setUint32(0, (4 << 20) + 1 + int(2 ** 31));
        h[8] = 1 + int(3);
        return h;
      }
    default: {
      // a valid request with random bytes flipped
      const f = check.slice();
      for (let k = 0; k < 3; k++) f[int(f.length)] = int(256);
      return f;
    }
  }
}

function vmRssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1]);
}

/**
 * Opens a connection, writes `chunks` one write each and half-closes it; the
 * agent reads to EOF and closes its side. Resolves with the bytes it answered.
 */
function throwAt(path: string, chunks: Uint8Array[]): Promise<number> {
  return new Promise((resolve) => {
    let answered = 0;
    const s = connect(path);
    s.on("error", () => {});
    s.on("data", (d: Buffer) => {
      answered += d.length;
    });
    s.on("close", () => resolve(answered));
    s.once("connect", () => {
      for (const c of chunks) s.write(c);
      s.end();
    });
  });
}

describe("dist/netagent under garbage", () => {
  it("survives 10,000 garbage strings on 500 connections and still answers Check", async () => {
    goPrograms();
    const agent = await startAgent(["--log-level", "error"]);
    try {
      const rand = prng(0x5eed);
      const rssBefore = vmRssKiB(agent.child.pid);
      const total = 10_000;
      const perConnection = 20;
      let next = 0;
      let answered = 0;
      // 16 connections at a time, below the agent's limit of 64.
      const worker = async () => {
        while (next < total) {
          const chunks: Uint8Array[] = [];
          for (let k = 0; k < perConnection && next < total; k++)
            chunks.push(garbage(rand, next++));
          answered += await throwAt(agent.socket, chunks);
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      // A connection of one truncated frame each, held and dropped.
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => throwAt(agent.socket, [garbage(rand, 6 * i + 1)])),
      );

      expect(agent.child.running).toBe(true);
      // It read the garbage and answered some of it (error statuses).
      expect(answered).toBeGreaterThan(0);
      const [step] = await goClient(agent.socket, [{ method: "Check", n: 100, c: 16 }]);
      expect(step?.codes).toEqual({ "0": 100 });
      const rssAfter = vmRssKiB(agent.child.pid);
      // Oversize bodies are skipped, not buffered: no growth near 4 MiB per frame.
      expect(rssAfter - rssBefore).toBeLessThan(64 * 1024);
      expect(agent.child.stderr).not.toMatch(/fatal|panic|Unhandled/i);
    } finally {
      await agent.stop();
    }
    expect(agent.child.exit).toEqual({ code: 0, signal: null });
  });
});
