/**
 * Protobuf fuzzing of every request message the agent takes
 * (UpdateInterfaceRequest, UpdateRoutesRequest, ListInterfacesRequest,
 * ListRoutesRequest, AddARPNeighborsRequest, CheckRequest; the requests:
 * proto-requests.ts), in process over the real handlers with a fake ip:
 * random bytes, structured random messages and mutations of valid ones.
 * The answer is OK, INVALID_ARGUMENT or NOT_FOUND (a link the request
 * names is absent), never INTERNAL or UNKNOWN from a decoder exception;
 * every ip -batch line the handlers produce is one command. Against
 * dist/netagent in a netns: proto-fuzz-netns.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { healthService } from "../../src/agent/services/health-service";
import { createNetworkService } from "../../src/agent/services/kata-network-service";
import { createLogger } from "../../src/common/log";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import type { IpRunner } from "../../src/net/iproute/ip-runner";
import type { NetState } from "../../src/net/model/model";
import { Code } from "../../src/ttrpc/codes";
import { FrameDecoder } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { pbDecodeResponse } from "../helpers/envelope-pbjs";
import { narrowReads } from "../helpers/fake-ip-reads";
import {
  ALLOWED,
  MAC,
  METHODS,
  type Method,
  mutate,
  serviceOf,
  structured,
  T,
  validRequest,
} from "./proto-requests";
import { prng, requestFrame } from "./raw";

const STATE: NetState = {
  links: [
    {
      index: 1,
      name: "lo",
      mac: "00:00:00:00:00:00",
      mtu: 65536,
      flags: ["LOOPBACK", "UP"],
      kind: "",
      addresses: [],
    },
    {
      index: 2,
      name: "eth0",
      mac: MAC,
      mtu: 1500,
      flags: ["BROADCAST", "UP", "LOWER_UP"],
      kind: "veth",
      addresses: [{ family: 4, address: "10.1.1.2", prefix: 24, scope: "global" }],
    },
  ],
  routes: [
    {
      family: 4,
      dst: "10.1.1.0/24",
      dev: "eth0",
      prefsrc: "10.1.1.2",
      scope: 253,
      metric: 0,
      onlink: false,
      mtu: 0,
      protocol: "kernel",
      type: "unicast",
    },
  ],
  neighbors: [],
};

/** A fake ip: the state above, and every batch line recorded. */
function fakeIp() {
  const lines: string[] = [];
  const ip = {
    readState: async () => structuredClone(STATE),
    ...narrowReads(async () => structuredClone(STATE)),
    readRoutes: async () => structuredClone(STATE.routes),
    batch: async (l: readonly string[]) => {
      lines.push(...l);
    },
    // The change and its read-back in one run: the state is never changed here.
    batchThenRoutes: async (l: readonly string[]) => {
      lines.push(...l);
      return structuredClone(STATE.routes);
    },
    batchThenLinks: async (l: readonly string[]) => {
      lines.push(...l);
      return structuredClone(STATE.links);
    },
  } as unknown as IpRunner;
  return { ip, lines };
}

/** A batch line is one command: no line breaks, NUL, comment or quote; no leading option. */
const ONE_COMMAND = /^(route|neigh|link|addr|address) [A-Za-z0-9_.:/@+= -]+$/;

function inProcessServer() {
  const { ip, lines } = fakeIp();
  const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS)
    .register(Health, healthService)
    .register(
      AgentService,
      createNetworkService({
        ip,
        log: createLogger("error", () => {}),
        hotplugTimeoutMs: 1,
        pollMs: 1,
      }),
    );
  const answers = new Map<number, { code: number; message: string }>();
  const conn = new ServerConnection({
    registry,
    write: (bytes) => {
      for (const f of new FrameDecoder().push(bytes)) {
        if (f.kind !== "frame") continue;
        const r = pbDecodeResponse(f.data);
        answers.set(f.streamId, { code: r.status?.code ?? 0, message: r.status?.message ?? "" });
      }
    },
  });
  let id = 1;
  return {
    lines,
    async call(m: Method, payload: Uint8Array) {
      const streamId = id;
      id += 2;
      conn.receive(requestFrame(streamId, serviceOf(m), m, payload));
      await conn.drain();
      return answers.get(streamId) as { code: number; message: string };
    },
  };
}

let tried = 0;

describe("protobuf fuzzing in process (real handlers, fake ip)", () => {
  const server = inProcessServer();
  const check = async (m: Method, payload: Uint8Array) => {
    tried++;
    const a = await server.call(m, payload);
    expect(a, `${m} ${Buffer.from(payload).toString("hex")}`).toBeDefined();
    expect(ALLOWED.has(a.code), `${m}: ${a.code} ${a.message.slice(0, 300)}`).toBe(true);
    if (a.code === Code.INVALID_ARGUMENT) expect(a.message).not.toBe("");
    // Values are quoted short whatever their length.
    expect(a.message.length).toBeLessThan(2048);
  };

  it.each(METHODS)(
    "%s: random bytes, structured random messages, mutations of a valid one",
    async (m) => {
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), (p) => check(m, p)),
        { numRuns: 700, seed: 0xb0f1 },
      );
      await fc.assert(
        fc.asyncProperty(structured(m), (p) => check(m, p)),
        { numRuns: 700, seed: 0xb0f2 },
      );
      const rand = prng(0xb0f3);
      const valid = validRequest(m);
      for (let i = 0; i < 700; i++) {
        let p = valid;
        for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) p = mutate(p, rand);
        await check(m, p);
      }
      for (const line of server.lines) expect(line).toMatch(ONE_COMMAND);
    },
    100_000,
  );

  it("huge repeated fields: 100,000 routes / addresses / neighbours of garbage", async () => {
    const junkRoute = T("Route").encode({ dest: "x\ny", device: "eth0\u0000" }).finish();
    const many = (tag: number, item: Uint8Array, n: number) => {
      const one = [tag, item.length, ...item];
      return Uint8Array.from({ length: one.length * n }, (_, i) => one[i % one.length] as number);
    };
    // UpdateRoutesRequest{routes(1): Routes{Routes(1) x 100,000}}.
    const routes = many(0x0a, junkRoute, 100_000);
    const lenVarint = (n: number) => {
      const out: number[] = [];
      while (n > 0x7f) {
        out.push((n & 0x7f) | 0x80);
        n >>>= 7;
      }
      out.push(n);
      return out;
    };
    const req = Uint8Array.from([0x0a, ...lenVarint(routes.length), ...routes]);
    const a = await server.call("UpdateRoutes", req);
    tried++;
    expect(a.code).toBe(Code.INVALID_ARGUMENT);
    expect(a.message).toMatch(/^routes\[0\]\./);
    const addr = T("IPAddress").encode({ address: "1.2.3", mask: "99" }).finish();
    const ifaceBody = Uint8Array.from([
      0x2a,
      MAC.length,
      ...Buffer.from(MAC),
      ...many(0x1a, addr, 100_000),
    ]);
    const b = await server.call(
      "UpdateInterface",
      Uint8Array.from([0x0a, ...lenVarint(ifaceBody.length), ...ifaceBody]),
    );
    tried++;
    expect(b.code).toBe(Code.INVALID_ARGUMENT);
    console.log(`protobuf fuzzing in process: ${tried} requests`);
  }, 60_000);
});
