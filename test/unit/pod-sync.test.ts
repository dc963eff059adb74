/**
 * PodSync's own rules, with read, drive and check the test's and a real
 * unix socket that accepts as the agent's end.
 *
 * The read-back: PodSync hands `drive` the state the check before the first sync read,
 * or the state the last Apply read back while a complete check has found
 * the guest equal to it: after an unequal check,
 * a failed sync or a lost connection the next sync asks the guest again
 * (drive gets nothing, and syncPod makes its Get).
 *
 * The pace of superseded checks: a check cut short because the pod
 * changed lets the next sync start at once; that next sync's check is not
 * cut short again, so a pod that changes during every check (neighbour
 * churn) beside a difference no sync can fix is checked with its pauses at
 * least every other sync, not re-synced as fast as the checks end.
 */
import { createServer, type Server, type Socket } from "node:net";
import { create } from "@bufbuild/protobuf";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { type State, StateSchema } from "../../src/gen/network_pb";
import type { PodReport, PodState } from "../../src/host/sync/sync-once";
import { type GuestCheck, type PodCheck, PodSync } from "../../src/host/watch/pod-sync";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const pod = (n: number): PodState => ({
  requests: { interfaces: [], routes: [], neighbors: [], skipped: [{ name: `v${n}`, why: "" }] },
});
const readBack = (n: number): State =>
  create(StateSchema, { sysctls: [{ key: "k", value: `${n}` }] });
const report = (n: number): PodReport => ({
  kind: "apply",
  apply: { plan: [], result: readBack(n), attempts: 1, notMirrored: [] },
  rules: { skipped: "not read (no pod netns)" },
});

let dir: TempDir;
let server: Server;
const accepted: Socket[] = [];

beforeEach(async () => {
  dir = tempDir("netagent-podsync-");
  server = createServer((s) => accepted.push(s));
  await new Promise<void>((r) => server.listen(dir.join("agent.sock"), r));
});
afterEach(async () => {
  for (const s of accepted.splice(0)) s.destroy();
  await new Promise((r) => server.close(r));
  dir.remove();
});

function unit(checks: PodCheck[], before: GuestCheck = { differences: ["not yet"] }) {
  let n = 0;
  const got: (State | undefined)[] = [];
  const sync = new PodSync({
    label: "test",
    addr: `unix://${dir.join("agent.sock")}`,
    timeoutMs: 2000,
    read: async () => pod(n),
    drive: async (_client, _pod, guest) => {
      got.push(guest);
      return report(n);
    },
    check: async (_c, _p, when) =>
      when === "before" ? before : (checks.shift() ?? { differences: [] }),
    emit: () => {},
    gone: () => false,
    onGone: () => {},
    resync: { debounceMs: 1, maxWaitMs: 10, backoffBaseMs: 10, backoffMaxMs: 20 },
  });
  const change = async () => {
    n++;
    const before = got.length;
    sync.notify("route");
    await waitFor(() => got.length > before, { timeoutMs: 5000, what: "a drive" });
  };
  return { sync, got, change };
}

describe("PodSync: the last read-back serves the next sync", () => {
  test("equal checks: each sync after the first gets the state the previous Apply read back", async () => {
    const u = unit([]);
    await u.change();
    await u.change();
    await u.change();
    await u.sync.stop();
    expect(u.got[0]).toBeUndefined();
    expect(u.got[1]?.sysctls[0]?.value).toBe("1");
    expect(u.got[2]?.sysctls[0]?.value).toBe("2");
  });

  test("the first sync gets the state the check before it read (its Get), not a second Get", async () => {
    const u = unit([], { differences: ["address missing"], guest: readBack(-1) });
    await u.change();
    await u.sync.stop();
    expect(u.got[0]?.sysctls[0]?.value).toBe("-1");
  });

  test("a check that finds a difference: the next sync gets nothing (the guest is asked)", async () => {
    const u = unit([{ differences: [] }, { differences: ["route 10.0.0.0/8 missing"] }]);
    await u.change();
    await u.change();
    await u.change();
    await u.sync.stop();
    expect(u.got[1]?.sysctls[0]?.value).toBe("1");
    expect(u.got[2]).toBeUndefined();
  });

  test("an unchecked sync (no complete read): nothing is kept", async () => {
    const u = unit([{ unchecked: "no Read" }]);
    await u.change();
    await u.change();
    await u.sync.stop();
    expect(u.got[1]).toBeUndefined();
  });

  test("a lost connection: the next sync gets nothing", async () => {
    const u = unit([]);
    await u.change();
    for (const s of accepted) s.destroy();
    // The resync the lost connection starts by itself.
    await waitFor(() => u.got.length >= 2, { timeoutMs: 5000, what: "the resync after the loss" });
    await u.sync.stop();
    expect(u.got[1]).toBeUndefined();
  });
});

describe("PodSync: the pace of superseded checks", () => {
  test("after a superseded check, the next check gets no signal to cut it short", async () => {
    let n = 0;
    /** Per check after a sync: whether it was given the superseded signal. */
    const signalled: boolean[] = [];
    const sync = new PodSync({
      label: "test",
      addr: `unix://${dir.join("agent.sock")}`,
      timeoutMs: 2000,
      read: async () => pod(n),
      drive: async () => report(n),
      check: async (_c, _p, when, superseded): Promise<GuestCheck> => {
        if (when === "before") return { differences: ["not yet"] };
        signalled.push(superseded !== undefined);
        // The pod changes during every check (a neighbour, say), for the first 6 checks.
        if (signalled.length <= 6) {
          n++;
          sync.notify("neighbor");
        }
        const differences = ["route 10.9.0.0/16 guest only"];
        return superseded?.aborted ? { differences, superseded: true } : { differences };
      },
      emit: () => {},
      gone: () => false,
      onGone: () => {},
      resync: { debounceMs: 1, maxWaitMs: 10, backoffBaseMs: 10, backoffMaxMs: 20 },
    });
    sync.notify("route");
    await waitFor(() => signalled.length >= 7, { timeoutMs: 5000, what: "7 checks" });
    await sync.stop();
    expect(signalled.slice(0, 7)).toEqual([true, false, true, false, true, false, true]);
    // Never two checks in a row that could be cut short.
    for (let i = 1; i < signalled.length; i++) {
      if (signalled[i - 1]) expect(signalled[i], `check ${i}`).toBe(false);
    }
  });
});
