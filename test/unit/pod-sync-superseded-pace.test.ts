/**
 * A check cut short because the pod changed (superseded) lets the next sync
 * start at once; that next sync's check is not cut short again, so a pod
 * that changes during every check (neighbour churn) beside a difference no
 * sync can fix is checked with its pauses at least every other sync, not
 * re-synced as fast as the checks end. The agent end is a real unix socket
 * that accepts; read, drive and check are the test's.
 */
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, expect, test } from "vitest";
import type { PodReport, PodState } from "../../src/host/sync/sync-once";
import { type GuestCheck, PodSync } from "../../src/host/watch/pod-sync";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const pod = (n: number): PodState => ({
  requests: { interfaces: [], routes: [], neighbors: [], skipped: [{ name: `v${n}`, why: "" }] },
});
const report: PodReport = {
  kind: "apply",
  apply: { plan: [], result: undefined, attempts: 1, notMirrored: [] },
  rules: { skipped: "not read (no pod netns)" },
};

let dir: TempDir;
let server: Server;
const accepted: Socket[] = [];

beforeEach(async () => {
  dir = tempDir("netagent-podsync-pace-");
  server = createServer((s) => accepted.push(s));
  await new Promise<void>((r) => server.listen(dir.join("agent.sock"), r));
});
afterEach(async () => {
  for (const s of accepted.splice(0)) s.destroy();
  await new Promise((r) => server.close(r));
  dir.remove();
});

test("after a superseded check, the next check gets no signal to cut it short", async () => {
  let n = 0;
  /** Per check after a sync: whether it was given the superseded signal. */
  const signalled: boolean[] = [];
  const sync = new PodSync({
    label: "test",
    addr: `unix://${dir.join("agent.sock")}`,
    timeoutMs: 2000,
    read: async () => pod(n),
    drive: async () => report,
    check: async (_c, _p, when, superseded): Promise<GuestCheck> => {
      if (when === "before") return { differences: ["not yet"] };
      signalled.push(superseded !== undefined);
      // The pod changes during every check (a neighbour, say), for the first 6 checks.
      if (signalled.length <= 6) {
        n++;
        sync.notify("neighbor");
      }
      if (superseded?.aborted)
        return { differences: ["route 10.9.0.0/16 guest only"], superseded: true };
      return { differences: ["route 10.9.0.0/16 guest only"] };
    },
    emit: () => {},
    gone: () => false,
    onGone: () => {},
    resync: { debounceMs: 1, maxWaitMs: 10, backoffBaseMs: 10, backoffMaxMs: 20 },
  });
  sync.notify("route");
  await waitFor(() => signalled.length >= 7, { timeoutMs: 5000, what: "7 checks" });
  await sync.stop();
  expect(signalled[0]).toBe(true);
  // Never two checks in a row that could be cut short.
  for (let i = 1; i < signalled.length; i++) {
    if (signalled[i - 1]) expect(signalled[i], `check ${i}`).toBe(false);
  }
  expect(signalled.slice(0, 7)).toEqual([true, false, true, false, true, false, true]);
});
