/**
 * Structured logs: one JSON object per line on stderr
 * (`{"time":...,"level":"info","msg":"...",...fields}`).
 */

export const LEVELS = ["debug", "info", "warn", "error"] as const;
export type Level = (typeof LEVELS)[number];

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  readonly level: Level;
}

/** A logger writing lines at `level` and above through `sink` (stderr by default). */
export function createLogger(
  level: Level,
  sink: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const min = LEVELS.indexOf(level);
  const emit = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS.indexOf(lvl) < min) return;
    const record = { time: new Date().toISOString(), level: lvl, msg, ...fields };
    sink(`${JSON.stringify(record, jsonSafe)}\n`);
  };
  return {
    level,
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
