/**
 * A deadline does not outlive its call's work: UpdateRoutes with 60,000
 * routes and a 150 ms deadline, then SIGTERM to dist/netagent (as init does
 * at shutdown). Were the call to leave the in-flight set when its deadline
 * answer goes out, while its `ip -batch` goes on, the shutdown would not
 * wait for it and the agent would exit mid-batch with part of the table
 * in. A call's work and its answer are one lifetime: after the exit the
 * table holds none or all of the routes, read with an independent
 * `ip -n NS -json route show`.
 *
 * Every other run the client hangs up before the SIGTERM.
 * RUNS (default 3; NETAGENT_DEADLINE_RUNS=10 for a longer look) fresh
 * namespaces and agents, one after the other.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";

const RUNS = Number(process.env.NETAGENT_DEADLINE_RUNS ?? 3);
const N = 60_000;
const ROUTES = Array.from({ length: N }, (_, i) => ({
  dest: `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`,
  gateway: "10.1.1.1",
  device: "eth0",
}));

let ns: Netns | undefined;
let agent: RunningAgent | undefined;
let client: AgentClient | undefined;

afterEach(async () => {
  client?.close();
  await agent?.stop();
  await ns?.remove();
  client = agent = ns = undefined;
});

/** Routes via the test gateway in the main table, counted by an independent `ip`. */
async function counted(n: Netns): Promise<number> {
  const routes = await n.json<{ gateway?: string }[]>("route", "show", "table", "main");
  return routes.filter((r) => r.gateway === "10.1.1.1").length;
}

describe("deadline, then SIGTERM: the table holds none or all of the routes", () => {
  it(
    `${RUNS} runs of 60,000 routes with a 150 ms deadline, SIGTERM after the answer`,
    async () => {
      const outcomes: string[] = [];
      for (let run = 0; run < RUNS; run++) {
        ns = await Netns.create("nt-dlsig");
        await ns.veth("eth0", "peer0");
        await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
        agent = await ns.startAgent(["--log-level", "warn"]);
        client = await AgentClient.connect(`unix://${agent.socket}`);
        const answer = await client
          .unary(
            AgentService.method.updateRoutes,
            { routes: { Routes: ROUTES } },
            { timeoutMs: 150 },
          )
          .then(
            () => "OK",
            (e: unknown) => (e instanceof TtrpcError ? Code[e.code] : String(e)),
          );
        // Every other run the client hangs up first, as a shim may on its deadline:
        // the work must still hold the shutdown.
        if (run % 2 === 1) {
          client.close();
          // not a wait: lets the hang-up usually reach the agent before SIGTERM; the outcome must be right in either order
          await new Promise((r) => setTimeout(r, 100));
        }
        const exit = await agent.child.stop("SIGTERM", 90_000);
        const n = await counted(ns);
        outcomes.push(`${answer} -> ${n}`);
        expect(exit.code, agent.child.stderr).toBe(0);
        expect([0, N], `run ${run + 1}: ${answer}, then ${n} of ${N} routes after exit`).toContain(
          n,
        );
        client.close();
        await agent.stop();
        await ns.remove();
        client = agent = ns = undefined;
      }
      console.log(`deadline + SIGTERM: ${RUNS}/${RUNS} none-or-all (${outcomes.join(", ")})`);
    },
    RUNS * 120_000,
  );
});
