/**
 * A batch in parts (plan-parallel.ts): `before` in one process, the lists
 * of `together` spread over a few processes running at once, and `after`
 * (with the read back) left to the caller. A line refused in one process
 * stops the others (killed: any prefix of their lines may have run, as
 * after a kill of one batch) and is what the run fails with, its index
 * that of the whole batch, so a caller knows no difference from one
 * process but the time.
 */

import { batchDocuments, IpBatchError } from "../parse/ip-results";
import type { BatchParts } from "../plan/plan-parallel";
import type { BatchWork, IpDispatch } from "./ip-dispatch";

/**
 * The most processes the middle part runs in at once, whatever the CPUs:
 * two, the only count whose gain is measured (bench/README.md, row 12).
 */
export const MAX_PARALLEL_IP = 2;

/** Lines of one process and, for each, its index in the whole batch. */
interface Share {
  lines: string[];
  at: number[];
}

/**
 * The lists of `together` (their first line at `start` of the whole batch)
 * spread over at most `processes` shares of about the same number of
 * lines, largest list first; each share keeps its lists in their order.
 */
export function shareOut(together: readonly string[][], start: number, processes: number): Share[] {
  const lists = together.map((lines, n) => ({ lines, n, at: 0 }));
  let next = start;
  for (const l of lists) {
    l.at = next;
    next += l.lines.length;
  }
  const shares = Array.from({ length: Math.min(processes, lists.length) }, () => ({
    lists: [] as typeof lists,
    size: 0,
  }));
  for (const l of [...lists].sort((a, b) => b.lines.length - a.lines.length)) {
    const smallest = shares.reduce((m, s) => (s.size < m.size ? s : m));
    smallest.lists.push(l);
    smallest.size += l.lines.length;
  }
  return shares.map((s) => {
    const share: Share = { lines: [], at: [] };
    for (const l of s.lists.sort((a, b) => a.n - b.n)) {
      l.lines.forEach((line, k) => {
        share.lines.push(line);
        share.at.push(l.at + k);
      });
    }
    return share;
  });
}

/** `err` with its line's index in the whole batch (`at` maps a process's index to it). */
export function inWholeBatch(err: unknown, at: (i: number) => number): unknown {
  if (!(err instanceof IpBatchError) || err.lineIndex === undefined) return err;
  return new IpBatchError(at(err.lineIndex), err.line, err.ipMessage, err.kind, {
    cause: err.cause,
  });
}

/**
 * Runs `parts.before`, then `parts.together` in up to `processes`
 * processes at once; `parts.after` is the caller's (it goes with the read
 * back). Fails like IpRunner.batch, naming a line of the whole batch.
 */
export async function runBeforeAndTogether(
  dispatch: IpDispatch,
  parts: BatchParts,
  processes: number,
  work: BatchWork,
): Promise<void> {
  const one = async (lines: readonly string[], signal?: AbortSignal) => {
    if (lines.length === 0) return;
    const r = await dispatch.changeBatch(lines, [], { ...work, oneShot: true, signal });
    batchDocuments(r, lines, undefined);
  };
  await one(parts.before, work.signal);
  const shares = shareOut(parts.together, parts.before.length, processes);
  // The first refusal stops the other processes; theirs (killed) are not the news.
  const stop = new AbortController();
  const signal = work.signal ? AbortSignal.any([work.signal, stop.signal]) : stop.signal;
  let failure: unknown;
  await Promise.all(
    shares.map((s) =>
      one(s.lines, signal).catch((err) => {
        if (failure !== undefined) return;
        failure = inWholeBatch(err, (i) => s.at[i] as number);
        stop.abort(failure);
      }),
    ),
  );
  if (failure !== undefined) throw failure;
}
