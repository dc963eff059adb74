/**
 * Structured logs: one JSON object per line on stderr
 * (`{"time":...,"level":"info","msg":"...",...fields}`).
 * Bounded: every string value is cut to {@link MAX_LOG_VALUE_BYTES}, and
 * each message text may write {@link LOG_LINES_PER_SEC} lines a second
 * (bursts of {@link LOG_BURST}); lines over that are counted, and the count
 * is written as one `log lines suppressed` line when that message may log
 * again, a second after the suppression began, or on flush. A peer's failing calls cannot flood the console.
 */
import { clipText } from "../ttrpc/quote";
import { LOG_BURST, LOG_LINES_PER_SEC, MAX_LOG_VALUE_BYTES } from "./limits";

/** How soon a suppressed count is reported when the message does not log again. */
const REPORT_AFTER_MS = 1000;

export const LEVELS = ["debug", "info", "warn", "error"] as const;
export type Level = (typeof LEVELS)[number];

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Writes the counts of lines suppressed so far (e.g. before exit). */
  flush(): void;
  readonly level: Level;
}

export interface LoggerOptions {
  /** Lines a second per message text, and the burst allowed above it. */
  linesPerSec?: number;
  burst?: number;
  /** Milliseconds clock (tests). */
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
  suppressed: number;
  level: Level;
}

/** A logger writing lines at `level` and above through `sink` (stderr by default). */
export function createLogger(
  level: Level,
  sink: (line: string) => void = (line) => process.stderr.write(line),
  options: LoggerOptions = {},
): Logger {
  const min = LEVELS.indexOf(level);
  const rate = options.linesPerSec ?? LOG_LINES_PER_SEC;
  const burst = options.burst ?? LOG_BURST;
  const now = options.now ?? (() => performance.now());
  const buckets = new Map<string, Bucket>();
  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    const record = { time: new Date().toISOString(), level: lvl, msg, ...fields };
    try {
      sink(`${JSON.stringify(record, jsonSafe)}\n`);
    } catch {
      // A broken console must not fail the work being logged.
    }
  };
  const report = (msg: string, b: Bucket) => {
    if (b.suppressed === 0) return;
    write(b.level, "log lines suppressed", { of: msg, suppressed: b.suppressed });
    b.suppressed = 0;
  };
  const emit = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS.indexOf(lvl) < min) return;
    const t = now();
    let b = buckets.get(msg);
    if (b === undefined) {
      // One bucket per message text: the texts are the agent's own, a few dozen.
      b = { tokens: burst, at: t, suppressed: 0, level: lvl };
      buckets.set(msg, b);
    }
    b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * rate);
    b.at = t;
    if (b.tokens < 1) {
      b.suppressed++;
      b.level = lvl;
      if (b.suppressed === 1) {
        // A flood that stops still gets its count said, a second later.
        const bucket = b;
        setTimeout(() => report(msg, bucket), REPORT_AFTER_MS).unref?.();
      }
      return;
    }
    b.tokens -= 1;
    report(msg, b);
    write(lvl, msg, fields);
  };
  return {
    level,
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    flush: () => {
      for (const [msg, b] of buckets) report(msg, b);
    },
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "string") return clipText(value, MAX_LOG_VALUE_BYTES);
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) {
    return { name: value.name, message: clipText(value.message, MAX_LOG_VALUE_BYTES) };
  }
  return value;
}
