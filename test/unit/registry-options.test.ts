/**
 * The agent's methods get its own readers and writers when registered
 * (src/ttrpc knows none of them): the large UpdateRoutes request and its
 * answer, and Check's answer. Other methods are left to protobuf-es.
 */
import { describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { encodeHealthCheckResponse } from "../../src/wire/health-writer";
import { decodeUpdateRoutesRequest } from "../../src/wire/routes-reader";

const fn = () => ({});

describe("the agent's registry options", () => {
  const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS)
    .register(Health, { check: fn, version: fn })
    .register(AgentService, { updateRoutes: fn, listRoutes: fn, listInterfaces: fn });

  it("UpdateRoutes reads with the hand-written reader and answers with the routes writer", () => {
    const m = registry.lookup("grpc.AgentService", "UpdateRoutes");
    expect(m.decode).toBe(decodeUpdateRoutesRequest);
    expect(m.encode).toBe(registry.lookup("grpc.AgentService", "ListRoutes").encode);
    expect(m.encode).toBeTypeOf("function");
  });

  it("Check answers with the hand-written writer", () => {
    expect(registry.lookup("grpc.Health", "Check").encode).toBe(encodeHealthCheckResponse);
  });

  it("a method without its own codec is left to protobuf-es", () => {
    const m = registry.lookup("grpc.AgentService", "ListInterfaces");
    expect(m.decode).toBeUndefined();
    expect(m.encode).toBeUndefined();
    expect(registry.lookup("grpc.Health", "Version").encode).toBeUndefined();
  });

  it("a registry without options uses none", () => {
    const plain = new ServiceRegistry().register(AgentService, { updateRoutes: fn });
    expect(plain.lookup("grpc.AgentService", "UpdateRoutes").decode).toBeUndefined();
  });
});
