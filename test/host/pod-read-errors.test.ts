/**
 * When a pod cannot be read, the error sync prints is its source's ("reading
 * netns X on this host: ..."), even when the packet filter's read (one of
 * the reads that run beside it) fails first: a path that is no namespace
 * makes nsenter fail at once, while the source's read here fails later.
 */
import { describe, expect, test } from "vitest";
import { readPodState } from "../../src/host/sync/sync-once";

/** A read that fails after `ms`, in the source's words (not a wait: why: it makes the source's read the later one). */
const failsAfter = (ms: number) =>
  new Promise<never>((_, reject) =>
    // not a wait: the delay makes the source's read fail after the packet filter's.
    setTimeout(() => reject(new Error("reading netns /etc/hostname on this host: slow")), ms),
  );

describe("a pod read that fails", () => {
  test("says the source's error, not the packet filter's that came first", async () => {
    const source = {
      netns: "/etc/hostname",
      read: () => failsAfter(300),
      readBoth: () => failsAfter(300),
    };
    await expect(readPodState(source, { full: true })).rejects.toThrow(
      "reading netns /etc/hostname on this host: slow",
    );
    await expect(readPodState(source)).rejects.toThrow(
      "reading netns /etc/hostname on this host: slow",
    );
  });
});
