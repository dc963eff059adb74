/**
 * The stand-in upstream (test/interop/go/ttrpc-upstream): containerd's Go
 * ttrpc server that records every request it receives in a JSON-lines log,
 * and the control payloads its netagent.test.Upstream methods take.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { goPrograms } from "./go";
import { type Child, start, waitForSocket } from "./process";

export const TEST_SERVICE = "netagent.test.Upstream";

/** One line of the stand-in's record. */
export interface UpstreamEvent {
  event: "listening" | "conn-open" | "conn-closed" | "request" | "answered" | "sleep-ended";
  t: number;
  instance?: string;
  conn?: number;
  stream?: number;
  service?: string;
  method?: string;
  payloadLen?: number;
  payloadSha256?: string;
  timeoutNano?: number;
  metadata?: [string, string][];
  code?: number;
  tag?: string;
  how?: "slept" | "deadline" | "cancelled";
  afterMs?: number;
  why?: string;
  /** Of "listening": the stand-in's PID (in its own PID namespace). */
  pid?: number;
}

export interface RunningUpstream {
  child: Child;
  socket: string;
  log: string;
  /** Every event recorded so far (all instances sharing the log). */
  events(): UpstreamEvent[];
  /** The recorded requests. */
  requests(): UpstreamEvent[];
  stop(): Promise<void>;
}

/** Starts the stand-in on `socket`, appending to `log`, and waits until it accepts. */
export async function startUpstream(
  socket: string,
  log: string,
  name = "upstream",
): Promise<RunningUpstream> {
  const child = start(goPrograms()["ttrpc-upstream"], [
    "-socket",
    socket,
    "-log",
    log,
    "-name",
    name,
  ]);
  await waitForSocket(child, socket);
  const events = () => readUpstreamLog(log);
  return {
    child,
    socket,
    log,
    events,
    requests: () => events().filter((e) => e.event === "request"),
    async stop() {
      try {
        await child.stop("SIGTERM");
      } finally {
        await child.kill();
      }
    },
  };
}

export function readUpstreamLog(log: string): UpstreamEvent[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as UpstreamEvent);
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** A control payload: varint fields and bytes fields by number, in number order. */
export function control(fields: Record<number, number | string | Uint8Array>): Uint8Array {
  const out: number[] = [];
  for (const [key, value] of Object.entries(fields).sort(([a], [b]) => Number(a) - Number(b))) {
    const num = Number(key);
    if (typeof value === "number") {
      out.push(...varint(num << 3), ...varint(value));
    } else {
      const bytes = typeof value === "string" ? new TextEncoder().encode(value) : value;
      out.push(...varint((num << 3) | 2), ...varint(bytes.length), ...bytes);
    }
  }
  return Uint8Array.from(out);
}

/** What the Answer method sends for {size, seed}: byte i = (i*31 + seed) mod 251. */
export function pattern(size: number, seed: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) % 251;
  return b;
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}
