/** retry: only on "Link not found", exponential with jitter, capped, bounded. */
import { describe, expect, it } from "vitest";
import { backoffDelay, isLinkNotFound, KATA_RETRY, retry } from "../../../src/host/sync/retry";
import { Code, TtrpcError } from "../../../src/ttrpc/codes";

const notFound = () => new TtrpcError("Link not found (hwAddr 02:00:00:00:00:01)", Code.NOT_FOUND);

describe("retry", () => {
  it("backoff: 20 ms·2^n, capped at 2 s, plus up to 100 ms of jitter", () => {
    const lows = Array.from({ length: 10 }, (_, n) => backoffDelay(KATA_RETRY, n, 0));
    expect(lows).toEqual([20, 40, 80, 160, 320, 640, 1280, 2000, 2000, 2000]);
    expect(backoffDelay(KATA_RETRY, 0, 0.999)).toBe(119);
    expect(backoffDelay(KATA_RETRY, 1000, 0.5)).toBe(2050);
  });

  it("retries while the message says Link not found, then returns the value and the attempts", async () => {
    const slept: number[] = [];
    const seen: number[] = [];
    let calls = 0;
    const r = await retry(
      async () => {
        if (++calls < 4) throw notFound();
        return "ok";
      },
      isLinkNotFound,
      KATA_RETRY,
      { sleep: async (ms) => slept.push(ms), random: () => 0.5, onRetry: (a) => seen.push(a) },
    );
    expect(r).toEqual({ value: "ok", attempts: 4 });
    expect(slept).toEqual([70, 90, 130]);
    expect(seen).toEqual([1, 2, 3]);
  });

  it("any other error fails at once", async () => {
    let calls = 0;
    const err = new TtrpcError("interface.mtu: 10 is below 68", Code.INVALID_ARGUMENT);
    await expect(
      retry(
        async () => {
          calls++;
          throw err;
        },
        isLinkNotFound,
        KATA_RETRY,
        { sleep: async () => {} },
      ),
    ).rejects.toBe(err);
    expect(calls).toBe(1);
  });

  it("gives up after the policy's attempts with the last error; the total wait is bounded", async () => {
    let calls = 0;
    let waited = 0;
    await expect(
      retry(
        async () => {
          calls++;
          throw notFound();
        },
        isLinkNotFound,
        KATA_RETRY,
        { sleep: async (ms) => (waited += ms), random: () => 0.999 },
      ),
    ).rejects.toThrow("Link not found");
    expect(calls).toBe(20);
    expect(waited).toBeLessThanOrEqual(19 * 2100);
  });

  it("isLinkNotFound looks at the text only, like the runtime", () => {
    expect(isLinkNotFound(new Error("rpc error: Link not found"))).toBe(true);
    expect(isLinkNotFound(new TtrpcError("not found", Code.NOT_FOUND))).toBe(false);
    expect(isLinkNotFound("Link not found")).toBe(false);
  });
});
