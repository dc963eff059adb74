/**
 * The requests of the protobuf fuzzing (proto-fuzz*.test.ts): every request
 * message the agent takes, written out with protobufjs independently of
 * proto/; random structured requests (huge repeated fields, hostile
 * strings), valid ones to mutate, the mutations decoders get wrong (wrong
 * wire types, overlong varints, nested garbage, truncation), and the
 * status codes an answer may have.
 */
import fc from "fast-check";
import protobuf from "protobufjs";
import { Code } from "../../src/ttrpc/codes";

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
export const T = (name: string) => root.lookupType(`fz.${name}`);

export const MAC = "02:00:00:00:0f:01";

/** The methods and, for each, how to build a random (structured) request. */
export const METHODS = [
  "UpdateInterface",
  "UpdateRoutes",
  "ListInterfaces",
  "ListRoutes",
  "AddARPNeighbors",
  "Check",
] as const;
export type Method = (typeof METHODS)[number];

export const serviceOf = (m: Method) => (m === "Check" ? "grpc.Health" : "grpc.AgentService");

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
  // Long and escape-heavy: JSON escaping grows these up to sixfold (ttrpc/quote.ts).
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
export function structured(m: Method): fc.Arbitrary<Uint8Array> {
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
export function validRequest(m: Method): Uint8Array {
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
export function mutate(bytes: Uint8Array, rand: () => number): Uint8Array {
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

export const ALLOWED = new Set([Code.OK, Code.INVALID_ARGUMENT, Code.NOT_FOUND]);
