/**
 * SyncsFirst (src/host/follow/syncs-first.ts): a comparison waits while a
 * sync phase runs, goes on as soon as none does, and never waits past its
 * bound (a node that never stops syncing is still verified).
 */
import { describe, expect, test } from "vitest";
import { SyncsFirst } from "../../src/host/follow/syncs-first";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("SyncsFirst", () => {
  test("quiet() resolves at once when no sync runs", async () => {
    const s = new SyncsFirst();
    const t0 = performance.now();
    await s.quiet(5000);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  test("quiet() waits for a running sync, and resolves once it ends", async () => {
    const s = new SyncsFirst();
    const gate = deferred();
    const sync = s.sync(() => gate.promise);
    let quiet = false;
    const waiting = s.quiet(60_000).then(() => {
      quiet = true;
    });
    // Several poll rounds pass while the sync runs: the comparison still waits.
    // not a wait: why: time passing is what is tested (quiet() must not end meanwhile).
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 25));
    expect(quiet).toBe(false);
    gate.resolve();
    await sync;
    await waiting;
    expect(quiet).toBe(true);
  });

  test("a sync phase that throws ends too", async () => {
    const s = new SyncsFirst();
    await expect(s.sync(() => Promise.reject(new Error("read failed")))).rejects.toThrow(
      "read failed",
    );
    const t0 = performance.now();
    await s.quiet(60_000);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  test("quiet() gives up waiting after its bound", async () => {
    const s = new SyncsFirst();
    const gate = deferred();
    const sync = s.sync(() => gate.promise);
    const t0 = performance.now();
    await s.quiet(100);
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(95);
    expect(ms).toBeLessThan(5000);
    gate.resolve();
    await sync;
  });
});
