/**
 * GetMetrics without an upstream: netagent's own metrics (Prometheus text,
 * all `netagent_`), checked against what the test did to it: calls by
 * method and code, the ip processes it started, and a rollback after a
 * failed UpdateRoutes (the table checked with ip).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";

let ns: Netns;
let agent: RunningAgent;
let client: AgentClient;

beforeAll(async () => {
  ns = await Netns.create("nt-metrics");
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:31:01" });
  await ns.ip("addr", "add", "10.31.0.2/24", "dev", "eth0");
  agent = await ns.startAgent();
  client = await AgentClient.connect(`unix://${agent.socket}`);
});

afterAll(async () => {
  client?.close();
  await agent?.stop();
  await ns?.remove();
});

const metrics = async () =>
  (await client.unary(AgentService.method.getMetrics, {}, { timeoutMs: 5000 })).metrics;

/** The value of the sample `name{labels}` (labels as printed), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

it("counts calls by method and code, ip processes and rollbacks", async () => {
  for (let i = 0; i < 3; i++) await client.unary(Health.method.check, {});
  await client.unary(AgentService.method.listRoutes, {});
  const before = await ns.routeDump();
  const failed = await client
    .unary(
      AgentService.method.updateRoutes,
      {
        routes: {
          Routes: [
            { dest: "10.40.1.0/24", device: "eth0" },
            { dest: "10.0.0.0/8", gateway: "192.0.2.9", device: "eth0" },
          ],
        },
      },
      { timeoutMs: 20_000 },
    )
    .then(
      () => undefined,
      (e: Error) => e.message,
    );
  expect(failed).toMatch(/Nexthop has invalid gateway/);
  expect(await ns.routeDump()).toBe(before);

  const text = await metrics();
  expect(sample(text, 'netagent_calls_total{service="grpc.Health",method="Check",code="OK"}')).toBe(
    // The readiness probe's Check too.
    4,
  );
  expect(
    sample(
      text,
      'netagent_calls_total{service="grpc.AgentService",method="UpdateRoutes",code="INVALID_ARGUMENT"}',
    ),
  ).toBe(1);
  expect(
    sample(
      text,
      'netagent_call_duration_seconds_count{service="grpc.AgentService",method="ListRoutes"}',
    ),
  ).toBe(1);
  expect(sample(text, 'netagent_rollbacks_total{what="routes",result="complete"}')).toBe(1);
  expect(sample(text, 'netagent_processes_started_total{program="ip"}')).toBeGreaterThanOrEqual(1);
  // No call in flight: at most the resident ip (src/net/iproute/ip-session.ts; the
  // failed batch ended the one before, and the next exchange starts another).
  expect([0, 1]).toContain(sample(text, 'netagent_processes_running{program="ip"}'));
  for (const line of text.split("\n").filter((l) => l && !l.startsWith("#"))) {
    expect(line).toMatch(/^netagent_[a-z_]+\{[^}]*\} [0-9.e+-]+$/);
  }
});
