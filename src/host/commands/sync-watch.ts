/**
 * `sync --watch`: the command side of sync-watch.ts. Lines are written as
 * they happen (not at the end, as other commands do); SIGINT and SIGTERM
 * finish the sync in flight and exit 0.
 */
import type { SyncOptions } from "../sync/drive-agent";
import { readPodState, syncPod } from "../sync/sync-once";
import { RESYNC_DEFAULTS } from "../watch/resync-scheduler";
import { watchPod } from "../watch/sync-watch";
import { renderJson, renderText, type WatchEvent } from "../watch/watch-output";
import { type CommandContext, UsageError } from "./common";
import type { PodSource } from "./pod-source";

export const WATCH_HELP = `Watching (--watch, with --netns only):
  After a first sync, follows the pod with \`ip monitor\` (links, addresses,
  routes, rules, neighbours) and \`xtables-monitor\` (its iptables-nft
  packet filter), never polling, and syncs the whole state again
  after each burst of changes: --debounce MS of quiet (default ${RESYNC_DEFAULTS.debounceMs}, at most
  ${RESYNC_DEFAULTS.maxWaitMs} ms after the burst began), one sync at a time, changes during a
  sync give one more. A burst that changes nothing sync sends costs one read
  of the pod and no call. Each sync is the one-shot sync (Apply when the
  agent offers it; --kata for the Kata sequence). A NIC gone from the pod
  keeps its guest twin (a VM cannot unplug its own PCI NIC) but loses its
  addresses and routes, and is set down through Apply. A lost
  connection is retried with backoff (100 ms doubling to 5 s), then the whole
  state is resent. One line per sync (--json: one JSON object per line).
  Ends with exit 0 when the namespace is deleted or on SIGINT/SIGTERM (after
  the sync in flight).
`;

/** Writes lines in order as they come; `drain()` resolves once all are written. */
function lineWriter(json: boolean) {
  let chain: Promise<unknown> = Promise.resolve();
  return {
    emit(e: WatchEvent) {
      const text = json ? renderJson(e) : renderText(e);
      chain = chain.then(() => Bun.write(Bun.stdout, text)).catch(() => {});
    },
    drain: () => chain,
  };
}

export async function runWatch(
  flags: Record<string, string | true>,
  ctx: CommandContext,
  source: PodSource,
  options: SyncOptions,
): Promise<number> {
  if (!flags["--watch"]) throw new UsageError("--debounce needs --watch");
  const netnsFlag = flags["--netns"];
  if (typeof netnsFlag !== "string")
    throw new UsageError("--watch needs --netns (a CNI result does not change)");
  if (flags["--dry-run"]) throw new UsageError("--watch and --dry-run do not go together");
  let debounceMs = RESYNC_DEFAULTS.debounceMs;
  if (flags["--debounce"] !== undefined) {
    debounceMs = Number(flags["--debounce"]);
    if (!Number.isInteger(debounceMs) || debounceMs < 0 || debounceMs > 10_000) {
      throw new UsageError(
        `--debounce: ${JSON.stringify(flags["--debounce"])} is not a number of milliseconds from 0 to 10000`,
      );
    }
  }
  // Resolved once by podSource: the namespace watched is the one read.
  const netns = source.netns as string;

  const out = lineWriter(ctx.json);
  const controller = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => controller.abort(sig);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    await watchPod(
      {
        netns,
        label: `netns ${netnsFlag}`,
        addr: ctx.addr,
        timeoutMs: ctx.timeoutMs,
        // Exactly what a one-shot sync reads and sends.
        read: (readRules) => readPodState({ ...source, readRules }, { full: true }),
        drive: (client, pod) =>
          syncPod(client, pod, { ...options, kata: flags["--kata"] === true }),
        emit: out.emit,
        resync: {
          ...RESYNC_DEFAULTS,
          debounceMs,
          maxWaitMs: Math.max(RESYNC_DEFAULTS.maxWaitMs, debounceMs * 10),
        },
      },
      controller.signal,
    );
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await out.drain();
  }
  return 0;
}
