/**
 * The pod side of sync and diff: `--netns NAME|PATH` (read with ip) or
 * `--cni-result FILE` (a CNI ADD result), exactly one of them.
 */
import { CniResultError, requestsFromCniResult } from "../pod/cni-result";
import { resolveNetns } from "../pod/netns-arg";
import { readPodBoth, readPodRequests, type SyncRequests } from "../pod/pod-requests";
import { type PodFullState, readPodFullState } from "../pod/pod-state";
import { readInput, UsageError } from "./common";

export const POD_SOURCE_HELP = `Pod (exactly one):
  --netns NAME|PATH    the pod's network namespace: a name under /run/netns
                       or a path such as /proc/PID/ns/net or a bind mount
  --cni-result FILE    a CNI ADD result (cniVersion 0.3.x, 0.4.0 or 1.x),
                       "-" for stdin`;

export interface PodSource {
  /** For messages: "netns pod1" or "CNI result r.json". */
  label: string;
  /** The resolved namespace, when the pod is one (its packet filter can be read). */
  netns?: string;
  read(): Promise<SyncRequests>;
  /** The whole state (netagent.v1), for a namespace; a CNI result has only what Kata carries. */
  readState?: () => Promise<PodFullState>;
  /** Both from one read of the namespace. */
  readBoth?: () => Promise<{ requests: SyncRequests; full: PodFullState }>;
}

/** A failure of this host's own ip or sysctl while reading the pod. */
class PodReadError extends Error {
  override readonly name = "PodReadError";
}

/**
 * Runs a read of the pod: a failure is this host's, not an agent's answer,
 * so it carries no status code (the runner's error would print as one).
 */
async function local<T>(netns: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new PodReadError(`reading netns ${netns} on this host: ${why}`, { cause: err });
  }
}

/** Validates the choice and the input before anything is sent; UsageError on bad input. */
export function podSource(flags: Record<string, string | true>): PodSource {
  const netns = flags["--netns"];
  const file = flags["--cni-result"];
  if ((netns === undefined) === (file === undefined)) {
    throw new UsageError("give exactly one of --netns and --cni-result");
  }
  if (typeof netns === "string") {
    const resolved = resolveNetns(netns);
    if (typeof resolved !== "string") throw new UsageError(`--netns: ${resolved.reason}`);
    return {
      label: `netns ${netns}`,
      netns: resolved,
      read: () => local(netns, () => readPodRequests(resolved)),
      readState: () => local(netns, () => readPodFullState(resolved)),
      readBoth: () => local(netns, () => readPodBoth(resolved)),
    };
  }
  const path = file as string;
  let requests: SyncRequests;
  try {
    requests = requestsFromCniResult(readInput("--cni-result", path));
  } catch (err) {
    if (err instanceof CniResultError) throw new UsageError(`--cni-result ${path}: ${err.message}`);
    throw err;
  }
  return { label: `CNI result ${path}`, read: async () => requests };
}
