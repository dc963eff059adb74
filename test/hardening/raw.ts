/**
 * Raw ttRPC over a unix socket for the hardening tests: write any bytes,
 * collect the answer frames decoded independently (protobufjs), see the
 * close. Also a seeded PRNG and a /proc reader for the agent's memory.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { encodeFrame, type Frame, FrameDecoder, FrameType } from "../../src/ttrpc/frame";
import { type PbResponse, pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";

export interface Answer extends Frame {
  response: PbResponse | undefined;
}

export interface RawConn {
  socket: Socket;
  answers: Answer[];
  /** Socket errors seen after connecting (a reset shows here; an orderly close does not). */
  errors: Error[];
  /** Resolves when the agent (or we) closed the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
  write(bytes: Uint8Array): void;
  /** Resolves with the answer on `streamId`, waiting up to `timeoutMs`. */
  answer(streamId: number, timeoutMs?: number): Promise<Answer>;
  destroy(): void;
}

/** Connects to the unix socket at `path` and resolves once connected. */
export function rawConnect(path: string): Promise<RawConn> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const decoder = new FrameDecoder();
    const answers: Answer[] = [];
    const errors: Error[] = [];
    const waiters = new Map<number, (a: Answer) => void>();
    let isClosed = false;
    const closed = new Promise<void>((r) =>
      socket.once("close", () => {
        isClosed = true;
        r();
      }),
    );
    socket.on("data", (chunk: Buffer) => {
      for (const f of decoder.push(chunk)) {
        if (f.kind !== "frame") continue;
        let response: PbResponse | undefined;
        try {
          response = pbDecodeResponse(f.data);
        } catch {
          response = undefined;
        }
        const a = { ...f, response };
        answers.push(a);
        waiters.get(f.streamId)?.(a);
      }
    });
    socket.once("error", (err) => {
      if (!isClosed) reject(err);
    });
    socket.once("connect", () => {
      socket.on("error", (err) => errors.push(err));
      resolve({
        socket,
        answers,
        errors,
        closed,
        isClosed: () => isClosed,
        write: (b) => {
          if (!socket.destroyed) socket.write(b);
        },
        answer(streamId, timeoutMs = 10_000) {
          const have = answers.find((a) => a.streamId === streamId);
          if (have) return Promise.resolve(have);
          return new Promise((res, rej) => {
            const timer = setTimeout(() => {
              waiters.delete(streamId);
              rej(new Error(`no answer on stream ${streamId} within ${timeoutMs} ms`));
            }, timeoutMs);
            closed.then(() => {
              clearTimeout(timer);
              rej(new Error(`connection closed before stream ${streamId} was answered`));
            });
            waiters.set(streamId, (a) => {
              clearTimeout(timer);
              waiters.delete(streamId);
              res(a);
            });
          });
        },
        destroy: () => socket.destroy(),
      });
    });
  });
}

/** A whole Request frame for `service/method` with `payload`. */
export function requestFrame(
  streamId: number,
  service: string,
  method: string,
  payload: Uint8Array = new Uint8Array(),
  timeoutNano = 0,
): Uint8Array {
  return encodeFrame(
    streamId,
    FrameType.Request,
    0,
    pbEncodeRequest({ service, method, payload, timeoutNano }),
  );
}

export const checkFrame = (streamId: number) => requestFrame(streamId, "grpc.Health", "Check");

/** Sends Check on a fresh connection and resolves with its status code (0 = SERVING). */
export async function checkOnFreshConnection(path: string): Promise<number | undefined> {
  const c = await rawConnect(path);
  try {
    c.write(checkFrame(1));
    const a = await c.answer(1);
    return a.response?.status?.code ?? 0;
  } finally {
    c.destroy();
  }
}

/** A small deterministic PRNG (mulberry32), so a failure can be replayed by its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resident memory of process `pid` in KiB (VmRSS). */
export function vmRssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1]);
}

/** Sockets process `pid` holds other than its stdio (and dups of it): listener and connections. */
export function socketFds(pid: number): number {
  const link = (fd: string) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return ""; // closed meanwhile
    }
  };
  const stdio = new Set(["0", "1", "2"].map(link));
  return readdirSync(`/proc/${pid}/fd`)
    .map(link)
    .filter((l) => l.startsWith("socket:") && !stdio.has(l)).length;
}
