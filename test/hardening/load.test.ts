/**
 * Load on dist/netagent: 256 connections at once, 16 calls in flight on
 * each. With --max-connections 300 every call is answered; with the default
 * cap (64) the excess is refused with a clean close and a log line each,
 * while the 64 it took keep working.
 */
import { describe, expect, it } from "vitest";
import { LOG_BURST } from "../../src/common/limits";
import { Code } from "../../src/ttrpc/codes";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { checkOnFreshConnection, type RawConn, rawConnect, requestFrame, vmRssKiB } from "./raw";

const CONNECTIONS = 256;
const IN_FLIGHT = 16;

/** Sends 16 calls at once (Check, Version, ListRoutes and an unknown method mixed) and checks every answer. */
async function burst(c: RawConn, firstId: number): Promise<number> {
  const ids: number[] = [];
  const frames: Uint8Array[] = [];
  for (let k = 0; k < IN_FLIGHT; k++) {
    const id = firstId + 2 * k;
    ids.push(id);
    const method = ["Check", "Check", "Version", "Nope"][k % 4] as string;
    frames.push(requestFrame(id, "grpc.Health", method));
  }
  // One write: all 16 are in flight together.
  c.write(Buffer.concat(frames));
  const answers = await Promise.all(ids.map((id) => c.answer(id, 60_000)));
  answers.forEach((a, k) => {
    const code = a.response?.status?.code ?? 0;
    expect(code).toBe(k % 4 === 3 ? Code.UNIMPLEMENTED : Code.OK);
  });
  return answers.length;
}

describe("256 connections, 16 calls in flight each", () => {
  it("--max-connections 300: all 256 served, every call answered (3 rounds)", async () => {
    const agent = await startHardenedAgent({
      args: ["--max-connections", "300", "--log-level", "warn"],
    });
    try {
      const rss0 = vmRssKiB(agent.child.pid);
      const conns = await Promise.all(
        Array.from({ length: CONNECTIONS }, () => rawConnect(agent.socket)),
      );
      let answered = 0;
      for (let round = 0; round < 3; round++) {
        const counts = await Promise.all(conns.map((c) => burst(c, 1 + round * 2 * IN_FLIGHT)));
        answered += counts.reduce((a, b) => a + b, 0);
      }
      expect(answered).toBe(CONNECTIONS * IN_FLIGHT * 3);
      expect(conns.every((c) => !c.isClosed())).toBe(true);
      expect(agent.child.stderr).not.toContain("connection refused");
      console.log(
        `load: ${CONNECTIONS} connections held, ${answered} calls answered, RSS +${Math.round((vmRssKiB(agent.child.pid) - rss0) / 1024)} MiB`,
      );
      for (const c of conns) c.destroy();
    } finally {
      await agent.stop();
    }
    expect(agent.child.exit).toEqual({ code: 0, signal: null });
  }, 110_000);

  it("default cap 64: 192 refused with a clean close and a log line each; the 64 keep working", async () => {
    const agent = await startHardenedAgent({ args: ["--log-level", "debug"] });
    try {
      // The readiness probe's connection must be gone before the count starts.
      // One served connection after it proves the probe was accepted; then
      // wait until the agent has seen both close.
      expect(await checkOnFreshConnection(agent.socket)).toBe(0);
      const count = (what: string) => agent.child.stderr.split(`"msg":"connection ${what}"`).length;
      await waitFor(() => count("opened") === count("closed"), { what: "no connection open" });
      const conns = await Promise.all(
        Array.from({ length: CONNECTIONS }, () => rawConnect(agent.socket)),
      );
      // Every connection tries a burst; the refused ones see EOF and no answer.
      const results = await Promise.all(
        conns.map((c) =>
          burst(c, 1).then(
            () => "served" as const,
            () => "refused" as const,
          ),
        ),
      );
      const served = conns.filter((_, i) => results[i] === "served");
      const refused = conns.filter((_, i) => results[i] === "refused");
      expect(served).toHaveLength(64);
      expect(refused).toHaveLength(CONNECTIONS - 64);
      for (const c of refused) {
        await c.closed;
        expect(c.answers).toEqual([]);
        // Clean: an orderly close, no reset seen by the peer.
        expect(c.errors).toEqual([]);
      }
      // A line each, up to the log's rate; the rest counted in one line a second later.
      const suppressed = () =>
        agent.child.stderr
          .split("\n")
          .filter((l) => l.includes('"of":"connection refused: limit reached"'))
          .reduce((n, l) => n + (JSON.parse(l).suppressed as number), 0);
      const lines = agent.child.stderr
        .split("\n")
        .filter((l) => l.includes('"msg":"connection refused: limit reached"'));
      expect(lines.length).toBeGreaterThanOrEqual(Math.min(LOG_BURST, CONNECTIONS - 64));
      await waitFor(() => lines.length + suppressed() === CONNECTIONS - 64, {
        what: "every refusal logged or counted",
      });
      expect(JSON.parse(lines[0] as string)).toMatchObject({
        level: "warn",
        msg: "connection refused: limit reached",
        maxConnections: 64,
      });
      // The 64 were not hurt: more rounds on each, all answered.
      for (let round = 1; round < 4; round++) {
        await Promise.all(served.map((c) => burst(c, 1 + round * 2 * IN_FLIGHT)));
      }
      expect(served.every((c) => !c.isClosed())).toBe(true);
      // A slot frees when one of them leaves.
      served[0]?.destroy();
      await waitFor(async () => (await checkOnFreshConnection(agent.socket)) === 0, {
        what: "a freed slot to serve a new connection",
      });
      for (const c of served) c.destroy();
    } finally {
      await agent.stop();
    }
  }, 110_000);
});
