/**
 * The agent's list of served services (src/agent/server/services.ts) against the
 * schemas: every service any generated file of proto/ defines is in it,
 * and nothing else, so a new service cannot be served without netagentctl
 * knowing it (test/host/ctl-call.test.ts holds the running agent to the
 * same list).
 */
import { readdirSync } from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { SERVED_SERVICES } from "../../src/agent/server/services";

const GEN = new URL("../../src/gen/", import.meta.url);

async function generatedServices(): Promise<string[]> {
  const names: string[] = [];
  for (const file of readdirSync(GEN).filter((f) => f.endsWith("_pb.ts"))) {
    const mod: Record<string, unknown> = await import(new URL(file, GEN).href);
    for (const value of Object.values(mod)) {
      const desc = value as Partial<DescService>;
      if (desc?.kind === "service") names.push(desc.typeName as string);
    }
  }
  return names.sort();
}

describe("SERVED_SERVICES", () => {
  it("is every service of the generated schemas, each once", async () => {
    const generated = await generatedServices();
    expect(generated).toEqual(["grpc.AgentService", "grpc.Health", "netagent.v1.Network"]);
    expect(SERVED_SERVICES.map((s) => s.typeName).sort()).toEqual(generated);
  });
});
