/**
 * IptablesRunner against a stand-in tool (test/fixtures/fake-iptables):
 * a stuck tool is killed at its own time limit and reported so (UNAVAILABLE,
 * as an ip past its limit: src/process/run-process.ts), a tool killed by
 * a signal is reported so, output past the cap stops the tool, the call's
 * abort signal kills it, a refused input carries the line and words. Each
 * error's kind is checked, and the status code it reaches a peer with
 * (the RPC edge's table, src/common/error-status.ts).
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { codeOfNetError } from "../../src/common/error-status";
import { IptablesRunner, RestoreError } from "../../src/net/iptables/iptables-runner";
import { NetError } from "../../src/net/model/net-error";
import { Code } from "../../src/ttrpc/codes";

const FAKE = fileURLToPath(new URL("../fixtures/fake-iptables/fake", import.meta.url));
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A runner whose iptables-save and iptables-restore are the fake in `role`. */
function runner(role: string, options: { timeoutMs?: number; maxBytes?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "netagent-fake-ipt-"));
  dirs.push(dir);
  const bin = join(dir, role);
  symlinkSync(FAKE, bin);
  return new IptablesRunner({
    ...options,
    binaries: { "iptables-save": bin, "iptables-restore": bin, "ip6tables-restore": bin },
  });
}

async function failure(p: Promise<unknown>): Promise<NetError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NetError);
  return err as NetError;
}

const data = new TextEncoder().encode("*filter\nCOMMIT\n");

describe("IptablesRunner", () => {
  it("passes the input on stdin and the flags (no shell)", async () => {
    const out = await runner("echo").restore(4, data, { test: true, counters: true });
    expect(new TextDecoder().decode(out)).toBe("*filter\nCOMMIT\n");
  });

  it("kills a stuck tool at its own time limit and says so: UNAVAILABLE", async () => {
    const start = performance.now();
    const err = await failure(runner("hang", { timeoutMs: 300 }).save(4));
    expect([err.kind, codeOfNetError(err)]).toEqual(["unavailable", Code.UNAVAILABLE]);
    expect(err.message).toBe("iptables-save did not finish within 300 ms and was killed");
    expect(performance.now() - start).toBeLessThan(20_000);
  });

  it("kills a tool that does not read its stdin at its own time limit", async () => {
    const big = new Uint8Array(2 * 1024 * 1024).fill(0x41);
    const err = await failure(runner("hang", { timeoutMs: 300 }).restore(4, big));
    expect([err.kind, codeOfNetError(err)]).toEqual(["unavailable", Code.UNAVAILABLE]);
    expect(err.message).toBe("iptables-restore did not finish within 300 ms and was killed");
  });

  it("reports a tool killed by a signal as killed", async () => {
    const err = await failure(runner("die").save(4));
    expect([err.kind, codeOfNetError(err)]).toEqual(["internal", Code.INTERNAL]);
    expect(err.message).toBe("iptables-save was killed by SIGKILL before it finished");
  });

  it("stops a tool printing past the cap: RESOURCE_EXHAUSTED", async () => {
    const err = await failure(runner("flood", { maxBytes: 1024 * 1024 }).save(4));
    expect([err.kind, codeOfNetError(err)]).toEqual(["exhausted", Code.RESOURCE_EXHAUSTED]);
    expect(err.message).toBe("iptables-save printed more than 1048576 bytes and was stopped");
  });

  it("refuses an input over the cap without running the tool", async () => {
    const err = await failure(runner("echo", { maxBytes: 8 }).restore(4, data));
    expect([err.kind, codeOfNetError(err)]).toEqual(["exhausted", Code.RESOURCE_EXHAUSTED]);
    expect(err.message).toBe("iptables-restore: input of 15 bytes is over the limit of 8");
  });

  it("kills the tool when the call is cancelled", async () => {
    const abort = new AbortController();
    const p = runner("hang", { timeoutMs: 60_000 }).save(4, { signal: abort.signal });
    // not a wait: the call is cancelled while its tool hangs (started synchronously by save), at any moment
    setTimeout(() => abort.abort(new Error("peer gone")), 100);
    const err = await failure(p);
    expect([err.kind, codeOfNetError(err)]).toEqual(["aborted", Code.CANCELLED]);
    expect(err.message).toBe("iptables-save stopped: the call was cancelled");
  });

  it("a call past its deadline: DEADLINE_EXCEEDED", async () => {
    const err = await failure(
      runner("hang", { timeoutMs: 60_000 }).save(4, { signal: AbortSignal.timeout(100) }),
    );
    expect([err.kind, codeOfNetError(err)]).toEqual(["aborted", Code.DEADLINE_EXCEEDED]);
  });

  it("a refused input: RestoreError with the line and the tool's words", async () => {
    const err = await failure(runner("refuse").restore(6, data));
    expect(err).toBeInstanceOf(RestoreError);
    expect([err.kind, codeOfNetError(err)]).toEqual(["invalid", Code.INVALID_ARGUMENT]);
    expect(err.message).toBe("ip6tables-restore: line 7: Port `99999' not valid");
    expect((err as RestoreError).failure.line).toBe(7);
  });

  it("a tool that cannot be started: INTERNAL naming it", async () => {
    const r = new IptablesRunner({ binaries: { "iptables-save": "/nonexistent/iptables-save" } });
    const err = await failure(r.save(4));
    expect([err.kind, codeOfNetError(err)]).toEqual(["internal", Code.INTERNAL]);
    expect(err.message).toMatch(/iptables-save/);
  });
});
