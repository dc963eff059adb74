/**
 * Progress for long waits (hot-plug retries, a booting VM): a status line
 * redrawn in place on a terminal, nothing at all when stderr is piped or
 * redirected, so scripts and tests see only the command's real output.
 */

import { escapeControls } from "./safe-text";

export interface Progress {
  /** Replaces the status line. */
  update(text: string): void;
  /** Clears the status line (call before printing results or errors). */
  clear(): void;
}

/** A sink that prints nothing. */
export const quietProgress: Progress = { update() {}, clear() {} };

interface TtyLike {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

const SPINNER = ["|", "/", "-", "\\"];

/**
 * Progress on `stream` (stderr by default) when it is a terminal, else
 * {@link quietProgress}. Updates are throttled to `minIntervalMs`.
 */
export function createProgress(
  stream: TtyLike = process.stderr,
  { minIntervalMs = 80, now = () => performance.now() } = {},
): Progress {
  if (!stream.isTTY) return quietProgress;
  let shown = false;
  let frame = 0;
  let last = Number.NEGATIVE_INFINITY;
  let lastText = "";
  return {
    update(text) {
      const t = now();
      if (text === lastText && t - last < minIntervalMs) return;
      last = t;
      lastText = text;
      const width = Math.max(20, (stream.columns || 80) - 3);
      // The text may name the guest's or the pod's links: escaped before it is cut.
      const line = `${SPINNER[frame++ % SPINNER.length]} ${escapeControls(text)}`.slice(0, width);
      stream.write(`\r\x1b[2K${line}`);
      shown = true;
    },
    clear() {
      if (shown) stream.write("\r\x1b[2K");
      shown = false;
      lastText = "";
    },
  };
}
