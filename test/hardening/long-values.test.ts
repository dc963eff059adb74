/**
 * Long and escape-heavy values against dist/netagent in a fresh netns
 * (ttrpc/quote.ts). A value quoted whole in an error would make the answer
 * larger than the 4 MiB frame limit (JSON escaping doubles `"` and `\`,
 * and turns `\x01` into six bytes), and an answer that cannot be encoded
 * must not take the process down. Each case here must be answered with a short
 * error naming the field, the value cut with its length, the table left as
 * it was, and the agent still serving on the same and on new connections.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { startHardenedAgent } from "./agent";
import { checkOnFreshConnection, rawConnect, requestFrame } from "./raw";

const MAC = "02:00:00:00:16:01";
let ns: Netns;
let agent: RunningAgent;
let client: AgentClient;

beforeAll(async () => {
  ns = await Netns.create("nt-longval");
  await ns.veth("eth0", "peer0", { mac: MAC });
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  agent = await startHardenedAgent({ netns: ns, args: ["--log-level", "warn"] });
  client = await AgentClient.connect(`unix://${agent.socket}`);
});

afterAll(async () => {
  client?.close();
  await agent?.stop();
  await ns?.remove();
});

async function refusal(p: Promise<unknown>): Promise<TtrpcError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected a refusal").toBeInstanceOf(TtrpcError);
  return err as TtrpcError;
}

const QUOTE = '"'.repeat(2_100_000);
const BACKSLASH = "\\".repeat(2_100_000);
const CONTROL = "\x01".repeat(700_000);

const route = (r: Record<string, string>) => ({
  routes: { Routes: [{ dest: "10.9.0.0/16", gateway: "10.1.1.1", device: "eth0", ...r }] },
});

const CASES: [string, () => Promise<unknown>, string, number][] = [
  [
    "route device of 2,100,000 '\"'",
    () => client.unary(AgentService.method.updateRoutes, route({ device: QUOTE })),
    "routes[0].device",
    QUOTE.length,
  ],
  [
    "route gateway of 2,100,000 '\\'",
    () => client.unary(AgentService.method.updateRoutes, route({ gateway: BACKSLASH })),
    "routes[0].gateway",
    BACKSLASH.length,
  ],
  [
    "route dest of 2,100,000 '\\'",
    () => client.unary(AgentService.method.updateRoutes, route({ dest: BACKSLASH })),
    "routes[0].dest",
    BACKSLASH.length,
  ],
  [
    "route device of 700,000 \\x01 (escaped x6)",
    () => client.unary(AgentService.method.updateRoutes, route({ device: CONTROL })),
    "routes[0].device",
    CONTROL.length,
  ],
  [
    "interface name of 2,100,000 '\\'",
    () =>
      client.unary(AgentService.method.updateInterface, {
        interface: { hwAddr: MAC, name: BACKSLASH },
      }),
    "interface.name",
    BACKSLASH.length,
  ],
  [
    "interface devicePath of 700,000 \\x01",
    () =>
      client.unary(AgentService.method.updateInterface, {
        interface: { hwAddr: MAC, devicePath: CONTROL },
      }),
    "interface.devicePath",
    CONTROL.length,
  ],
  [
    "neighbour lladdr of 2,100,000 '\"'",
    () =>
      client.unary(AgentService.method.addARPNeighbors, {
        neighbors: {
          ARPNeighbors: [{ toIPAddress: { address: "10.1.1.9" }, device: "eth0", lladdr: QUOTE }],
        },
      }),
    "neighbors[0].lladdr",
    QUOTE.length,
  ],
];

describe("values of megabytes are quoted short and the agent keeps serving", () => {
  it.each(CASES)(
    "%s: INVALID_ARGUMENT, the value cut with its length",
    async (_, call, field, n) => {
      const before = await ns.routeDump();
      const err = await refusal(call());
      expect(err.code, err.message.slice(0, 200)).toBe(Code.INVALID_ARGUMENT);
      expect(err.message.startsWith(`${field}: "`)).toBe(true);
      expect(err.message).toContain(`…" (${n} bytes)`);
      expect(err.message.length).toBeLessThan(1024);
      expect(agent.child.running).toBe(true);
      expect(await ns.routeDump()).toBe(before);
      // The same connection and a new one both still answer.
      await client.unary(AgentService.method.listRoutes, {});
      expect(await checkOnFreshConnection(agent.socket)).toBe(0);
    },
  );

  it("a Request.service just under 4 MiB: UNIMPLEMENTED, the name cut, the agent serving", async () => {
    const conn = await rawConnect(agent.socket);
    try {
      // Envelope: 0a + a 4-byte length + the name, 12 05 "Check": 12 bytes besides the name.
      const service = "\\".repeat(MAX_DATA_LENGTH - 12);
      const frame = requestFrame(1, service, "Check");
      expect(frame.length).toBe(10 + MAX_DATA_LENGTH);
      conn.write(frame);
      const a = await conn.answer(1, 30_000);
      expect(a.response?.status?.code).toBe(Code.UNIMPLEMENTED);
      const message = a.response?.status?.message ?? "";
      expect(message).toMatch(/^service \\+… \(4194292 bytes\)$/);
      expect(message.length).toBeLessThan(1024);
      conn.write(requestFrame(3, "grpc.Health", "Check"));
      expect((await conn.answer(3)).response?.status?.code ?? 0).toBe(0);
    } finally {
      conn.destroy();
    }
    expect(agent.child.running).toBe(true);
  });
});
