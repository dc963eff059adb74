/**
 * Protobuf fuzzing of every request message the agent takes
 * (UpdateInterfaceRequest, UpdateRoutesRequest, ListInterfacesRequest,
 * ListRoutesRequest, AddARPNeighborsRequest, CheckRequest): random bytes,
 * structured random messages (huge repeated fields, hostile strings) and
 * mutations of valid ones (wrong wire types, overlong varints, nested
 * garbage, truncation). The answer is OK, INVALID_ARGUMENT or NOT_FOUND (a
 * link the request names is absent), never INTERNAL or UNKNOWN from a decoder
 * exception; every ip -batch line the handlers produce is one command.
 * In process over the real handlers with a fake ip, then the mutating calls
 * against dist/netagent in a fresh netns: an invalid request changes nothing
 * (`ip -n NS -json` identical before and after).
 */
import fc from "fast-check";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { healthService } from "../../src/agent/services/health-service";
import { createNetworkService } from "../../src/agent/services/kata-network-service";
import { createLogger } from "../../src/common/log";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import type { IpRunner } from "../../src/net/iproute/ip-runner";
import type { NetState } from "../../src/net/model/model";
import { Code } from "../../src/ttrpc/codes";
import { encodeFrame, FrameDecoder, FrameType } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { ServiceRegistry } from "../../src/ttrpc/service";
import type { RunningAgent } from "../helpers/agent";
import { pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";
import { narrowReads } from "../helpers/fake-ip-reads";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { prng, type RawConn, rawConnect, requestFrame } from "./raw";

/** The agent's request messages, written out independently of proto/ (field numbers as Kata's). */
const root = protobuf.parse(`
  syntax = "proto3";
  package fz;
  message IPAddress { int32 family = 1; string address = 2; string mask = 3; }
  message Interface {
    string device = 1; string name = 2; repeated IPAddress IPAddresses = 3; uint64 mtu = 4;
    string hwAddr = 5; string devicePath = 6; string type = 7; uint32 raw_flags = 8;
  }
  message Route {
    string dest = 1; string gateway = 2; string device = 3; string source = 4;
    uint32 scope = 5; int32 family = 6; uint32 flags = 7; uint32 mtu = 8;
  }
  message ARPNeighbor {
    IPAddress toIPAddress = 1; string device = 2; string lladdr = 3; int32 state = 4; int32 flags = 5;
  }
  message Routes { repeated Route Routes = 1; }
  message ARPNeighbors { repeated ARPNeighbor ARPNeighbors = 1; }
  message UpdateInterfaceRequest { Interface interface = 1; }
  message UpdateRoutesRequest { Routes routes = 1; }
  message AddARPNeighborsRequest { ARPNeighbors neighbors = 1; }
  message CheckRequest { string service = 1; }
`).root;
const T = (name: string) => root.lookupType(`fz.${name}`);

const MAC = "02:00:00:00:0f:01";

/** The methods and, for each, how to build a random (structured) request. */
const METHODS = [
  "UpdateInterface",
  "UpdateRoutes",
  "ListInterfaces",
  "ListRoutes",
  "AddARPNeighbors",
  "Check",
] as const;
type Method = (typeof METHODS)[number];

const serviceOf = (m: Method) => (m === "Check" ? "grpc.Health" : "grpc.AgentService");

// ---- generators ------------------------------------------------------------

const hostileString = fc.oneof(
  fc.constantFrom(
    "",
    "eth0",
    "lo",
    "eth0\nroute flush",
    "eth0\u0000",
    "-force",
    "#x",
    "a".repeat(16),
    "ёth0",
    "eth0 ; reboot",
    "10.0.0.1/33",
    "::ffff:1.2.3.4",
    "1.2.3",
    "10.1.1.1",
    "10.1.1.0/24",
    "fd00::1",
    "fd00::/64",
    "0.0.0.0/0",
    MAC,
    "FF:FF:FF:FF:FF:FF",
  ),
  fc.string({ maxLength: 24 }),
  fc.string({ unit: "binary", maxLength: 24 }),
  // Long and escape-heavy: JSON escaping grows these up to sixfold (issue 16).
  fc
    .tuple(fc.constantFrom('"', "\\", "\x01", "\u2028", "😀"), fc.integer({ min: 16, max: 4096 }))
    .map(([c, n]) => c.repeat(n)),
);
const u32 = fc.oneof(fc.constantFrom(0, 1, 4, 253, 254, 255, 256, 1500, 0xffff_ffff), fc.nat());
const i32 = fc.oneof(fc.constantFrom(0, 1, -1, 2, 128, 0x7fff_ffff, -0x8000_0000), fc.integer());
const ipAddress = fc.record({ family: i32, address: hostileString, mask: hostileString });

const route = fc.record({
  dest: hostileString,
  gateway: hostileString,
  device: hostileString,
  source: hostileString,
  scope: u32,
  family: i32,
  flags: u32,
  mtu: u32,
});

/** A random, structured request for `m`, as protobufjs encodes it. */
function structured(m: Method): fc.Arbitrary<Uint8Array> {
  const enc = (type: string) => (o: object) => T(type).encode(T(type).fromObject(o)).finish();
  switch (m) {
    case "UpdateInterface":
      return fc
        .record({
          interface: fc.record({
            device: hostileString,
            name: hostileString,
            IPAddresses: fc.array(ipAddress, { maxLength: 6 }),
            mtu: fc.oneof(fc.constantFrom(0, 68, 1500, 65536), fc.nat()),
            hwAddr: fc.oneof(fc.constant(MAC), hostileString),
            devicePath: hostileString,
            type: hostileString,
            raw_flags: u32,
          }),
        })
        .map(enc("UpdateInterfaceRequest"));
    case "UpdateRoutes":
      return fc
        .record({ routes: fc.record({ Routes: fc.array(route, { maxLength: 8 }) }) })
        .map(enc("UpdateRoutesRequest"));
    case "AddARPNeighbors":
      return fc
        .record({
          neighbors: fc.record({
            ARPNeighbors: fc.array(
              fc.record({
                toIPAddress: ipAddress,
                device: hostileString,
                lladdr: hostileString,
                state: i32,
                flags: i32,
              }),
              { maxLength: 6 },
            ),
          }),
        })
        .map(enc("AddARPNeighborsRequest"));
    case "Check":
      return fc.record({ service: hostileString }).map(enc("CheckRequest"));
    default:
      // List* take an empty message; anything else is unknown fields or garbage.
      return fc.uint8Array({ maxLength: 64 });
  }
}

/** A valid request of each mutating kind, for the mutator to start from. */
function validRequest(m: Method): Uint8Array {
  const enc = (type: string, o: object) => T(type).encode(T(type).fromObject(o)).finish();
  switch (m) {
    case "UpdateInterface":
      return enc("UpdateInterfaceRequest", {
        interface: {
          name: "eth0",
          hwAddr: MAC,
          mtu: 1500,
          IPAddresses: [{ family: 0, address: "10.1.1.2", mask: "24" }],
        },
      });
    case "UpdateRoutes":
      return enc("UpdateRoutesRequest", {
        routes: {
          Routes: [
            { dest: "10.1.1.0/24", device: "eth0", source: "10.1.1.2", scope: 253 },
            { gateway: "10.1.1.1", device: "eth0" },
          ],
        },
      });
    case "AddARPNeighbors":
      return enc("AddARPNeighborsRequest", {
        neighbors: {
          ARPNeighbors: [
            {
              toIPAddress: { family: 0, address: "10.1.1.9" },
              device: "eth0",
              lladdr: "02:00:00:00:0f:09",
            },
          ],
        },
      });
    case "Check":
      return enc("CheckRequest", { service: "x" });
    default:
      return new Uint8Array();
  }
}

/** Mutates protobuf bytes in ways decoders get wrong. */
function mutate(bytes: Uint8Array, rand: () => number): Uint8Array {
  const int = (n: number) => Math.floor(rand() * n);
  const b = [...bytes];
  const pos = b.length ? int(b.length) : 0;
  switch (int(9)) {
    case 0: // flip a byte
      if (b.length) b[pos] = int(256);
      break;
    case 1: // truncate
      b.length = pos;
      break;
    case 2: // a tag's wire type changed (to 1, 3, 4, 5, 6 or 7)
      if (b.length) b[pos] = ((b[pos] as number) & ~7) | ([1, 3, 4, 5, 6, 7][int(6)] as number);
      break;
    case 3: // an overlong varint (11 bytes of continuation) for a field
      b.splice(pos, 0, (1 + int(8)) << 3, ...Array(11).fill(0xff), 0x01);
      break;
    case 4: // nested garbage in a length-delimited field 1..8
      {
        const inner = Array.from({ length: int(40) }, () => int(256));
        b.splice(pos, 0, ((1 + int(8)) << 3) | 2, inner.length, ...inner);
      }
      break;
    case 5: // a length prefix far past the end
      b.splice(pos, 0, (1 << 3) | 2, 0xff, 0xff, 0xff, 0xff, 0x0f);
      break;
    case 6: // a huge field number, group start without end
      b.push(0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x0b);
      break;
    case 7: // duplicated tail (repeated fields repeated, scalars overwritten)
      b.push(...b.slice(pos));
      break;
    default: // random bytes inserted
      b.splice(pos, 0, ...Array.from({ length: 1 + int(8) }, () => int(256)));
  }
  return Uint8Array.from(b);
}

// ---- in process --------------------------------------------------------------

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

const ALLOWED = new Set([Code.OK, Code.INVALID_ARGUMENT, Code.NOT_FOUND]);
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

// ---- against the agent in a netns ----------------------------------------------

describe("protobuf fuzzing against dist/netagent in a fresh netns", () => {
  let ns: Netns;
  let agent: RunningAgent;
  let conn: RawConn;
  let nextId = 1;

  beforeAll(async () => {
    ns = await Netns.create("nt-pfuzz");
    await ns.veth("eth0", "peer0", { mac: MAC });
    await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
    await settled();
    agent = await startHardenedAgent({ netns: ns, args: ["--log-level", "error"] });
    conn = await rawConnect(agent.socket);
  });

  afterAll(async () => {
    conn?.destroy();
    await agent?.stop();
    await ns?.remove();
  });

  /**
   * Until IPv6 duplicate address detection ends (after a link comes up), the
   * kernel itself changes link-local addresses and local routes: wait for it.
   */
  async function settled(): Promise<void> {
    await waitFor(async () => !(await ns.ip("-json", "addr", "show")).includes("tentative"), {
      what: "IPv6 DAD to finish",
    });
  }

  /**
   * Links, addresses, routes and neighbours, as ip prints them; of a
   * neighbour only what a call sets (address, link, MAC, permanent or not):
   * the kernel moves the others through REACHABLE/STALE/DELAY by itself.
   */
  async function dump(): Promise<string> {
    const neigh = (json: string) =>
      JSON.stringify(
        (
          JSON.parse(json || "[]") as {
            dst: string;
            dev: string;
            lladdr?: string;
            state?: string[];
          }[]
        ).map((n) => [n.dst, n.dev, n.lladdr, n.state?.includes("PERMANENT") ?? false]),
      );
    return Promise.all([
      ns.ip("-json", "-details", "addr", "show"),
      ns.ip("-json", "-details", "route", "show", "table", "all"),
      ns.ip("-json", "-details", "-6", "route", "show", "table", "all"),
      ns.ip("-json", "neigh", "show").then(neigh),
    ]).then((parts) => parts.join("\n"));
  }

  it("200 mutated UpdateInterface / UpdateRoutes / AddARPNeighbors: invalid ones change nothing", async () => {
    const rand = prng(0xb0f4);
    const counts = { ok: 0, invalid: 0, notFound: 0 };
    let before: string = await dump();
    for (let i = 0; i < 200; i++) {
      const m = (["UpdateInterface", "UpdateRoutes", "AddARPNeighbors"] as const)[i % 3] as Method;
      let p = validRequest(m);
      for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) p = mutate(p, rand);
      const id = nextId;
      nextId += 2;
      conn.write(
        encodeFrame(
          id,
          FrameType.Request,
          0,
          pbEncodeRequest({
            service: "grpc.AgentService",
            method: m,
            payload: p,
            timeoutNano: 5e9,
          }),
        ),
      );
      const a = await conn.answer(id, 30_000);
      const code = a.response?.status?.code ?? 0;
      const msg = a.response?.status?.message ?? "";
      expect(ALLOWED.has(code), `${m} ${Buffer.from(p).toString("hex")}: ${code} ${msg}`).toBe(
        true,
      );
      const after = await dump();
      if (code === Code.OK) {
        counts.ok++;
        await settled();
        before = await dump();
      } else {
        if (code === Code.INVALID_ARGUMENT) counts.invalid++;
        else counts.notFound++;
        expect(after, `${m} answered ${code} "${msg}" yet changed the netns`).toBe(before);
      }
      tried++;
    }
    expect(counts.invalid).toBeGreaterThan(40);
    expect(agent.child.running).toBe(true);
    console.log(
      `protobuf fuzzing in the netns: ${JSON.stringify(counts)}; total ${tried} requests`,
    );
  }, 110_000);
});
