/**
 * Our TypeScript client (src/client/client.ts) against containerd's Go ttrpc
 * server, which serves grpc.Health with hand-encoded responses.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { startGoServer } from "../helpers/go";
import type { Child } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";

describe("AgentClient -> Go ttrpc server", () => {
  let dir: TempDir;
  let server: Child;
  let socket: string;
  let client: AgentClient;

  beforeAll(async () => {
    dir = tempDir();
    socket = dir.join("go.sock");
    server = await startGoServer(socket);
    client = await AgentClient.connect(`unix://${socket}`);
  });
  afterAll(async () => {
    client?.close();
    await server?.stop();
    dir?.remove();
  });

  it("Check decodes as SERVING", async () => {
    const reply = await client.unary(Health.method.check, {});
    expect(reply.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("Version decodes both strings", async () => {
    const reply = await client.unary(Health.method.version, {});
    expect(reply.grpcVersion).toBe("0.0.1");
    expect(reply.agentVersion).toBe("go-ttrpc");
  });

  it("an unknown method is UNIMPLEMENTED 'method X', an unknown service 'service X'", async () => {
    const method = client.raw("grpc.Health", "Nope", new Uint8Array());
    await expect(method).rejects.toBeInstanceOf(TtrpcError);
    await expect(method).rejects.toMatchObject({
      code: Code.UNIMPLEMENTED,
      message: "method Nope",
    });
    await expect(client.raw("grpc.Nope", "Check", new Uint8Array())).rejects.toMatchObject({
      code: Code.UNIMPLEMENTED,
      message: "service grpc.Nope",
    });
  });

  it("concurrent calls with deadlines get increasing ids the Go server accepts", async () => {
    const replies = await Promise.all(
      Array.from({ length: 100 }, () =>
        client.unary(Health.method.check, {}, { timeoutMs: 5_000 }),
      ),
    );
    expect(replies.every((r) => r.status === HealthCheckResponse_ServingStatus.SERVING)).toBe(true);
  });

  it("a deadline longer than a JS timer holds (30 days) is sent and does not expire", async () => {
    const reply = await client.unary(Health.method.check, {}, { timeoutMs: 30 * 24 * 3600 * 1000 });
    expect(reply.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });

  it("the connection is still usable afterwards", async () => {
    expect(client.closed).toBe(false);
    const reply = await client.unary(Health.method.check, {});
    expect(reply.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  });
});
