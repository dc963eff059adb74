/**
 * Protobuf fuzzing, long values (ttrpc/quote.ts): every string field of every
 * request message, and the Request envelope's service and method, filled
 * with escape-heavy text (`"`, `\`, `\x01`, U+2028, astral characters, plain
 * letters) from a few hundred bytes up to what a 4 MiB frame can carry. The
 * 273,804 fuzzed frames before never tried a long value, and one 2 MB `"`
 * crashed the agent. Each answer must be a status the request deserves, its
 * message short, its frame within the limit. In process over the real
 * handlers and a fake ip (the binary is driven with the same values in
 * long-values.test.ts).
 */
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { healthService } from "../../src/agent/services/health-service";
import { createNetworkService } from "../../src/agent/services/kata-network-service";
import { createLogger } from "../../src/common/log";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import type { IpRunner } from "../../src/net/iproute/ip-runner";
import { Code } from "../../src/ttrpc/codes";
import { FrameDecoder, HEADER_LENGTH, MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { pbDecodeResponse } from "../helpers/envelope-pbjs";
import { narrowReads } from "../helpers/fake-ip-reads";
import { requestFrame } from "./raw";

const root = protobuf.parse(`
  syntax = "proto3";
  package fl;
  message IPAddress { int32 family = 1; string address = 2; string mask = 3; }
  message Interface {
    string device = 1; string name = 2; repeated IPAddress IPAddresses = 3; uint64 mtu = 4;
    string hwAddr = 5; string devicePath = 6; string type = 7;
  }
  message Route { string dest = 1; string gateway = 2; string device = 3; string source = 4; }
  message ARPNeighbor { IPAddress toIPAddress = 1; string device = 2; string lladdr = 3; }
  message UpdateInterfaceRequest { Interface interface = 1; }
  message UpdateRoutesRequest { message Routes { repeated Route Routes = 1; } Routes routes = 1; }
  message AddARPNeighborsRequest {
    message ARPNeighbors { repeated ARPNeighbor ARPNeighbors = 1; } ARPNeighbors neighbors = 1;
  }
  message CheckRequest { string service = 1; }
`).root;

const MAC = "02:00:00:00:0f:11";
type Build = (v: string) => object;
/** [method, field, request with that field set to v, the rest valid]. */
const FIELDS: [string, string, Build][] = [
  ...(["dest", "gateway", "device", "source"] as const).map((f): [string, string, Build] => [
    "UpdateRoutes",
    `routes[0].${f}`,
    (v) => ({ routes: { Routes: [{ dest: "10.9.0.0/16", device: "eth0", [f]: v }] } }),
  ]),
  ...(["device", "name", "hwAddr", "devicePath", "type"] as const).map(
    (f): [string, string, Build] => [
      "UpdateInterface",
      `interface.${f}`,
      (v) => ({ interface: { hwAddr: MAC, [f]: v } }),
    ],
  ),
  ...(["address", "mask"] as const).map((f): [string, string, Build] => [
    "UpdateInterface",
    `interface.IPAddresses[0].${f}`,
    (v) => ({
      interface: { hwAddr: MAC, IPAddresses: [{ address: "10.1.1.2", mask: "24", [f]: v }] },
    }),
  ]),
  ...(["device", "lladdr"] as const).map((f): [string, string, Build] => [
    "AddARPNeighbors",
    `neighbors[0].${f}`,
    (v) => ({
      neighbors: {
        ARPNeighbors: [
          { toIPAddress: { address: "10.1.1.9" }, device: "eth0", lladdr: MAC, [f]: v },
        ],
      },
    }),
  ]),
  ...(["address", "mask"] as const).map((f): [string, string, Build] => [
    "AddARPNeighbors",
    `neighbors[0].toIPAddress.${f}`,
    (v) => ({
      neighbors: {
        ARPNeighbors: [
          { toIPAddress: { address: "10.1.1.9", [f]: v }, device: "eth0", lladdr: MAC },
        ],
      },
    }),
  ]),
  ["Check", "service", (v) => ({ service: v })],
];

const CHARS = ['"', "\\", "\x01", "\u2028", "😀", "a"];
/** UTF-8 sizes: a few hundred bytes, 70 KB, and as much as the frame can carry. */
const SIZES = [300, 70_000, MAX_DATA_LENGTH - 200];
const repeatTo = (c: string, bytes: number) => c.repeat(Math.floor(bytes / Buffer.byteLength(c)));

function server() {
  const state = { links: [], routes: [], neighbors: [] };
  const ip = {
    readState: async () => structuredClone(state),
    ...narrowReads(async () => structuredClone(state)),
    readRoutes: async () => [],
    batch: async () => {},
    batchThenRoutes: async () => [],
    batchThenLinks: async () => [],
  } as unknown as IpRunner;
  const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS)
    .register(Health, healthService)
    .register(
      AgentService,
      createNetworkService({ ip, log: createLogger("error", () => {}), hotplugTimeoutMs: 1 }),
    );
  const answers = new Map<number, { code: number; message: string; size: number }>();
  const decoder = new FrameDecoder();
  const conn = new ServerConnection({
    registry,
    write: (bytes) => {
      for (const f of decoder.push(bytes)) {
        if (f.kind !== "frame") continue;
        const r = pbDecodeResponse(f.data);
        const status = { code: r.status?.code ?? 0, message: r.status?.message ?? "" };
        answers.set(f.streamId, { ...status, size: bytes.length });
      }
    },
  });
  let id = 1;
  return async (service: string, method: string, payload: Uint8Array) => {
    const streamId = id;
    id += 2;
    conn.receive(requestFrame(streamId, service, method, payload, 10_000_000));
    await conn.drain();
    return answers.get(streamId) as { code: number; message: string; size: number };
  };
}

describe("long and escape-heavy values in every string field, up to the frame limit", () => {
  const call = server();
  let tried = 0;

  it.each(FIELDS)(
    "%s %s",
    async (method, field, build) => {
      const type = root.lookupType(`fl.${method}Request`);
      for (const c of CHARS) {
        for (const size of SIZES) {
          const value = repeatTo(c, size);
          const payload = type.encode(type.fromObject(build(value))).finish();
          const service = method === "Check" ? "grpc.Health" : "grpc.AgentService";
          const a = await call(service, method, payload);
          tried++;
          const what = `${field} = ${JSON.stringify(c)} x ${value.length}`;
          // Check answers SERVING whatever service it is asked about; the rest refuse.
          if (method === "Check") expect(a.code, what).toBe(Code.OK);
          else expect([Code.INVALID_ARGUMENT, Code.NOT_FOUND], what).toContain(a.code);
          if (a.code === Code.INVALID_ARGUMENT)
            expect(a.message.startsWith(`${field}: `), what).toBe(true);
          expect(a.message.length, what).toBeLessThan(1024);
          expect(a.size).toBeLessThanOrEqual(HEADER_LENGTH + MAX_DATA_LENGTH);
        }
      }
    },
    120_000,
  );

  it("the envelope's service and method, up to the frame limit: UNIMPLEMENTED, quoted short", async () => {
    for (const c of CHARS) {
      const value = repeatTo(c, MAX_DATA_LENGTH - 64);
      for (const [service, method] of [
        [value, "Check"],
        ["grpc.Health", value],
      ] as const) {
        const a = await call(service, method, new Uint8Array());
        tried++;
        expect(a.code).toBe(Code.UNIMPLEMENTED);
        expect(a.message).toMatch(/^(service|method) .*… \(\d+ bytes\)$/s);
        expect(a.message.length).toBeLessThan(1024);
      }
    }
    console.log(`long-value fuzzing: ${tried} requests`);
  }, 120_000);
});
