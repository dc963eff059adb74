import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { modulesReady } from "../../src/agent/services/modules-ready";
import { Code, TtrpcError } from "../../src/ttrpc/codes";

describe("modulesReady (the wait for init's late modules)", () => {
  let dir: string;
  let lateList: string;
  let done: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "netagent-modules-"));
    lateList = join(dir, "init.modules.late");
    done = join(dir, "init.modules.done");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("does not wait where there is no late list (a host, a test's netns)", async () => {
    expect(modulesReady({ lateList, done, waitMs: 5000 })()).toBeUndefined();
    writeFileSync(lateList, "x\n");
    writeFileSync(done, "");
    expect(modulesReady({ lateList, done, waitMs: 5000 })()).toBeUndefined();
  });

  it("waits for the marker when the image has a late list", async () => {
    writeFileSync(lateList, "kernel/net/netfilter/x_tables.ko\n");
    const ready = modulesReady({ lateList, done, waitMs: 10_000 });
    let settled = false;
    const p = ready()?.then(() => {
      settled = true;
    });
    // not a wait: a stretch in which the wait must not end without the marker
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    writeFileSync(done, "");
    await p;
    expect(settled).toBe(true);
  });

  it("fails UNAVAILABLE naming the marker after its bound", async () => {
    writeFileSync(lateList, "kernel/net/netfilter/x_tables.ko\n");
    const t0 = performance.now();
    const err = await modulesReady({ lateList, done, waitMs: 300 })()?.catch((e) => e);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(err).toBeInstanceOf(TtrpcError);
    expect((err as TtrpcError).code).toBe(Code.UNAVAILABLE);
    expect((err as Error).message).toContain(done);
    expect((err as Error).message).toContain("300 ms");
  });

  it("stops waiting when the call is cancelled", async () => {
    writeFileSync(lateList, "x\n");
    const ac = new AbortController();
    const p = modulesReady({ lateList, done, waitMs: 10_000 })(ac.signal)?.catch((e) => e);
    // not a wait: the cancellation comes while it waits for the marker, at any moment
    setTimeout(() => ac.abort(new Error("cancelled by peer")), 100);
    const err = await p;
    expect((err as Error).message).toBe("cancelled by peer");
  });
});
