/** syncAgent: the runtime's call order, the retry, UNIMPLEMENTED tolerated, failures thrown. */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { AgentClient } from "../../../src/client/client";
import { HealthCheckResponse_ServingStatus } from "../../../src/gen/health_pb";
import { InterfaceSchema, RouteSchema } from "../../../src/gen/types_pb";
import type { SyncRequests } from "../../../src/host/pod/pod-requests";
import { syncAgent } from "../../../src/host/sync/drive-agent";
import { Code, TtrpcError } from "../../../src/ttrpc/codes";

type Answer = (request: unknown) => unknown;

/** A client whose answers come from `answers[method]`, recording every call. */
function fakeClient(answers: Record<string, Answer>) {
  const calls: string[] = [];
  const client = {
    async unary(method: { name: string }, request: unknown) {
      calls.push(method.name);
      const answer = answers[method.name];
      if (!answer) throw new Error(`unexpected ${method.name}`);
      return answer(request);
    },
  } as unknown as AgentClient;
  return { client, calls };
}

const requests: SyncRequests = {
  interfaces: [
    create(InterfaceSchema, { name: "eth0", hwAddr: "02:00:00:00:00:01" }),
    create(InterfaceSchema, { name: "net1", hwAddr: "02:00:00:00:00:02" }),
  ],
  routes: [create(RouteSchema, { gateway: "10.0.0.1", device: "eth0" })],
  neighbors: [{ device: "eth0" } as SyncRequests["neighbors"][number]],
  skipped: [],
};

const serving = () => ({ status: HealthCheckResponse_ServingStatus.SERVING });
const echo = (req: unknown) => (req as { interface: unknown }).interface;
const noSleep = { sleep: async () => {}, random: () => 0 };

describe("syncAgent", () => {
  it("Check, UpdateInterface per interface, one UpdateRoutes, AddARPNeighbors", async () => {
    let routesSent: unknown;
    const { client, calls } = fakeClient({
      Check: serving,
      UpdateInterface: echo,
      UpdateRoutes: (req) => {
        routesSent = req;
        return { Routes: [] };
      },
      AddARPNeighbors: () => ({}),
    });
    const report = await syncAgent(client, requests, { timeoutMs: 1000, hooks: noSleep });
    expect(calls).toEqual([
      "Check",
      "UpdateInterface",
      "UpdateInterface",
      "UpdateRoutes",
      "AddARPNeighbors",
    ]);
    expect((routesSent as { routes: { Routes: unknown[] } }).routes.Routes).toHaveLength(1);
    expect(report.interfaces.map((i) => [i.name, i.attempts])).toEqual([
      ["eth0", 1],
      ["net1", 1],
    ]);
    expect(report.neighbors).toEqual({ sent: 1, unimplemented: false });
  });

  it("retries UpdateInterface on Link not found only, and tolerates UNIMPLEMENTED neighbours", async () => {
    let misses = 2;
    const { client, calls } = fakeClient({
      Check: serving,
      UpdateInterface: (req) => {
        if (misses-- > 0)
          throw new TtrpcError("Link not found (hwAddr 02:00:00:00:00:01)", Code.NOT_FOUND);
        return echo(req);
      },
      UpdateRoutes: () => ({ Routes: [] }),
      AddARPNeighbors: () => {
        throw new TtrpcError("grpc.AgentService/AddARPNeighbors", Code.UNIMPLEMENTED);
      },
    });
    const report = await syncAgent(client, requests, { timeoutMs: 1000, hooks: noSleep });
    expect(calls.filter((c) => c === "UpdateInterface")).toHaveLength(4);
    expect(report.interfaces[0]?.attempts).toBe(3);
    expect(report.neighbors.unimplemented).toBe(true);
  });

  it("stops at the first other failure: no routes after a refused interface", async () => {
    const { client, calls } = fakeClient({
      Check: serving,
      UpdateInterface: () => {
        throw new TtrpcError("interface.mtu: 10 is below 68", Code.INVALID_ARGUMENT);
      },
    });
    await expect(syncAgent(client, requests, { timeoutMs: 1000, hooks: noSleep })).rejects.toThrow(
      "interface.mtu",
    );
    expect(calls).toEqual(["Check", "UpdateInterface"]);
  });

  it("refuses an agent that is not SERVING; sends no AddARPNeighbors without neighbours", async () => {
    const down = fakeClient({
      Check: () => ({ status: HealthCheckResponse_ServingStatus.NOT_SERVING }),
    });
    await expect(syncAgent(down.client, requests, { timeoutMs: 1000 })).rejects.toThrow(
      "agent health is NOT_SERVING",
    );
    const { client, calls } = fakeClient({
      Check: serving,
      UpdateInterface: echo,
      UpdateRoutes: () => ({ Routes: [] }),
    });
    await syncAgent(client, { ...requests, neighbors: [] }, { timeoutMs: 1000 });
    expect(calls.at(-1)).toBe("UpdateRoutes");
  });
});
