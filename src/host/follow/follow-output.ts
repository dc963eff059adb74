/**
 * What `follow` prints: each sandbox's `sync --watch` events (watch-output.ts)
 * and its own lifecycle events, one line each prefixed with the sandbox id,
 * or with `--json` one JSON object per line with a `sandbox` field. Lines
 * are written in the order they happen.
 */
import { escapeControls, terminalSafe } from "../print/safe-text";
import { renderText, type WatchEvent } from "../watch/watch-output";

/** The states a sandbox is in, as /sandboxes and the metrics name them. */
export type SandboxState = "waiting" | "syncing" | "equal" | "failed";

export const SANDBOX_STATES: readonly SandboxState[] = ["waiting", "syncing", "equal", "failed"];

/** A sandbox's own events: found (waiting), its ends known (syncing), failed, dropped. */
type LifeEvent = {
  event: "sandbox";
  at: string;
  /** "dropped": it went away (directory or netns removed); everything started for it stopped. */
  state: SandboxState | "dropped";
  detail: string;
};

/** The follower's own events (no sandbox): start, warnings, end. */
export type NodeEvent = { event: "follow"; at: string; detail: string };

export type FollowEvent = { sandbox: string } & (WatchEvent | LifeEvent);

/** One JSON object, one line. */
function renderFollowJson(e: FollowEvent | NodeEvent): string {
  return `${terminalSafe(JSON.stringify(e))}\n`;
}

/** One line of text: the sandbox id, then the event as `sync --watch` says it. */
function renderFollowText(e: FollowEvent | NodeEvent): string {
  if (e.event === "follow")
    return `${escapeControls(`${e.at.slice(11, 23)} follow: ${e.detail}`)}\n`;
  const { sandbox, ...event } = e;
  if (event.event === "sandbox") {
    return `${escapeControls(`${sandbox} ${event.at.slice(11, 23)} ${event.state}: ${event.detail}`)}\n`;
  }
  return `${escapeControls(sandbox)} ${renderText(event as WatchEvent)}`;
}

/** Writes lines in order as they come; `drain()` resolves once all are written. */
export function followWriter(json: boolean, write: (text: string) => Promise<unknown>) {
  let chain: Promise<unknown> = Promise.resolve();
  return {
    emit(e: FollowEvent | NodeEvent) {
      const text = json ? renderFollowJson(e) : renderFollowText(e);
      chain = chain.then(() => write(text)).catch(() => {});
    },
    drain: () => chain,
  };
}
