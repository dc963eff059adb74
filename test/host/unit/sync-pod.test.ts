/**
 * syncPod: probe netagent.v1.Network once with Get; Apply when it answers,
 * the Kata sequence (and the list of what it could not carry) when the
 * agent says UNIMPLEMENTED; any other failure of the probe is a failure.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { AgentClient } from "../../../src/client/client";
import { HealthCheckResponse_ServingStatus } from "../../../src/gen/health_pb";
import { ApplyResponseSchema, StateSchema } from "../../../src/gen/network_pb";
import { InterfaceSchema } from "../../../src/gen/types_pb";
import type { PodFullState } from "../../../src/host/pod/pod-state";
import { type PodState, syncPod } from "../../../src/host/sync/sync-once";
import { Code, TtrpcError } from "../../../src/ttrpc/codes";

function fakeClient(answers: Record<string, (request: unknown) => unknown>) {
  const calls: string[] = [];
  const client = {
    async unary(method: { name: string }, request: unknown) {
      calls.push(method.name);
      const answer = answers[method.name];
      if (!answer) throw new TtrpcError(`method ${method.name}`, Code.UNIMPLEMENTED);
      return answer(request);
    },
  } as unknown as AgentClient;
  return { client, calls };
}

const full: PodFullState = {
  links: [
    {
      index: 2,
      name: "eth0",
      mac: "02:00:00:00:00:01",
      mtu: 1400,
      flags: ["UP"],
      kind: "veth",
      addresses: [{ family: 4, address: "10.0.0.2", prefix: 28, scope: "global" }],
    },
  ],
  routes: [
    {
      family: 4,
      table: 100,
      dst: "0.0.0.0/0",
      gateway: "10.0.0.1",
      dev: "eth0",
      scope: 0,
      metric: 0,
      onlink: false,
      mtu: 0,
      protocol: "boot",
      type: "unicast",
    },
  ],
  rules: [
    { family: 4, priority: 32765, not: false, src: "10.0.0.2/32", action: "lookup", table: 100 },
  ],
  neighbors: [],
  sysctls: [{ key: "net.ipv4.conf.eth0.rp_filter", value: "2" }],
  allSysctls: new Map(),
};

const pod: PodState = {
  requests: {
    interfaces: [create(InterfaceSchema, { name: "eth0", hwAddr: "02:00:00:00:00:01" })],
    routes: [],
    neighbors: [],
    skipped: [],
  },
  full,
};

const kata = {
  Check: () => ({ status: HealthCheckResponse_ServingStatus.SERVING }),
  UpdateInterface: (req: unknown) => (req as { interface: unknown }).interface,
  UpdateRoutes: () => ({ Routes: [] }),
};

describe("syncPod", () => {
  it("an agent that answers Get gets one Apply, exact, with the pod's whole state", async () => {
    let sent:
      | { exact: boolean; bestEffort: boolean; desired: { rules: unknown[]; sysctls: unknown[] } }
      | undefined;
    const { client, calls } = fakeClient({
      Get: () => create(StateSchema, {}),
      Apply: (req) => {
        sent = req as typeof sent;
        return create(ApplyResponseSchema, {
          plan: ["rule add priority 32765 from 10.0.0.2/32 lookup 100"],
        });
      },
    });
    const r = await syncPod(client, pod, { timeoutMs: 1000 });
    expect(calls).toEqual(["Get", "Apply"]);
    expect(r.kind).toBe("apply");
    if (r.kind === "apply") expect(r.apply.notMirrored).toEqual([]);
    expect(sent?.exact).toBe(true);
    expect(sent?.bestEffort).toBe(true);
    expect(sent?.desired.rules).toHaveLength(1);
    expect(sent?.desired.sysctls).toEqual([
      expect.objectContaining({ key: "net.ipv4.conf.eth0.rp_filter", value: "2" }),
    ]);
  });

  it("UNIMPLEMENTED: the Kata sequence, and what it could not carry", async () => {
    const { client, calls } = fakeClient(kata);
    const r = await syncPod(client, pod, { timeoutMs: 1000 });
    expect(calls).toEqual(["Get", "Check", "UpdateInterface", "UpdateRoutes"]);
    expect(r.kind).toBe("kata");
    if (r.kind !== "kata") return;
    expect(r.missed).toEqual([
      "route in table 100: default via 10.0.0.1 dev eth0",
      "rule 32765: from 10.0.0.2/32 lookup 100",
      "the main table is empty (the guest keeps its kernel prefix routes)",
      "sysctl net.ipv4.conf.eth0.rp_filter = 2",
    ]);
  });

  it("--kata: no probe at all", async () => {
    const { client, calls } = fakeClient(kata);
    await syncPod(client, pod, { timeoutMs: 1000, kata: true });
    expect(calls[0]).toBe("Check");
  });

  it("a probe that fails otherwise fails the sync (no silent fallback)", async () => {
    const { client } = fakeClient({
      ...kata,
      Get: () => {
        throw new TtrpcError("agent shutting down", Code.UNAVAILABLE);
      },
    });
    await expect(syncPod(client, pod, { timeoutMs: 1000 })).rejects.toThrow(/shutting down/);
  });
});
