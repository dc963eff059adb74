/**
 * The guest's init loads the netfilter modules beside the agent, not before
 * it (rootfs/init.sh), so the first Check does not wait for them; it writes
 * a marker once every module is in. GetIPTables / SetIPTables wait for that
 * marker, bounded, and say what is missing when it does not come. Outside
 * an image with a late module list (a host, a test's netns) there is
 * nothing to wait for.
 */
import { existsSync } from "node:fs";
import { MODULES_WAIT_MS } from "../../common/limits";
import { Code, TtrpcError } from "../../ttrpc/codes";

/** The list init loads beside the agent; its presence means the wait applies. */
export const LATE_MODULES_LIST = "/etc/init.modules.late";
/** Written by init once every module of both lists is loaded. */
const MODULES_DONE = "/run/init.modules.done";
// How long an iptables call waits for the marker before it fails UNAVAILABLE:
// MODULES_WAIT_MS (src/common/limits.ts).
const POLL_MS = 25;

export type ModulesWait = (signal?: AbortSignal) => Promise<void> | undefined;

export interface ModulesReadyOptions {
  lateList?: string;
  done?: string;
  waitMs?: number;
}

/**
 * A function that returns undefined when the late modules are loaded (or
 * there is no late list), so a caller goes on in the same tick and calls
 * keep their order in the write queue; otherwise a promise that resolves
 * once the marker is there, or rejects UNAVAILABLE naming the marker after
 * `waitMs`, or with the signal's reason when cancelled. Once seen, the
 * marker is not looked for again.
 */
export function modulesReady(options: ModulesReadyOptions = {}): ModulesWait {
  const lateList = options.lateList ?? LATE_MODULES_LIST;
  const done = options.done ?? MODULES_DONE;
  const waitMs = options.waitMs ?? MODULES_WAIT_MS;
  let ready = false;
  const seen = () => {
    ready ||= !existsSync(lateList) || existsSync(done);
    return ready;
  };
  const wait = async (signal?: AbortSignal) => {
    const deadline = Date.now() + waitMs;
    while (!seen()) {
      signal?.throwIfAborted();
      if (Date.now() >= deadline) {
        throw new TtrpcError(
          `kernel modules: the netfilter modules are still loading (${done} not written by init after ${waitMs} ms)`,
          Code.UNAVAILABLE,
        );
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  return (signal) => (seen() ? undefined : wait(signal));
}
