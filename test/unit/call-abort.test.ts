import { describe, expect, it } from "vitest";
import { CallAbort } from "../../src/ttrpc/call-abort";

describe("CallAbort: an AbortController made on demand", () => {
  it("a signal read after abort() is already aborted, with that reason", () => {
    const a = new CallAbort();
    a.abort("deadline");
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe("deadline");
  });

  it("a signal read before abort() fires its listeners once", () => {
    const a = new CallAbort();
    const seen: unknown[] = [];
    a.signal.addEventListener("abort", () => seen.push(a.signal.reason));
    a.abort("gone");
    a.abort("again");
    expect(seen).toEqual(["gone"]);
  });

  it("the first reason wins either way, and the signal is one object", () => {
    const a = new CallAbort();
    a.abort("first");
    a.abort("second");
    expect(a.signal).toBe(a.signal);
    expect(a.signal.reason).toBe("first");
  });

  it("an untouched call stays unaborted", () => {
    expect(new CallAbort().signal.aborted).toBe(false);
  });
});
