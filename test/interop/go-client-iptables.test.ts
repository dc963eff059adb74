/**
 * containerd's Go ttrpc client calling GetIPTables / SetIPTables on the
 * compiled agent inside a namespace. The request bytes are encoded here by
 * hand from the Kata protocol's field numbers (GetIPTablesRequest{bool
 * is_ipv6 = 1}, SetIPTablesRequest{bool is_ipv6 = 1; bytes data = 2},
 * responses {bytes data = 1}), not with our generated code, so a wrong
 * field number in proto/agent.proto fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normaliseRules } from "../../src/net/iptables/iptables-text";
import { Code } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";
import { rulesFixture, rulesIn } from "../helpers/iptables";
import { Netns } from "../helpers/netns";

/** A protobuf varint. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** Field `field` as a length-delimited value (wire type 2). */
function bytesField(field: number, value: Uint8Array): number[] {
  return [(field << 3) | 2, ...varint(value.length), ...value];
}

const hex = (b: number[]) => Buffer.from(b).toString("hex");

/** The bytes of field 1 (wire type 2) of a response; the only field it has. */
function responseData(payloadHex: string): string {
  const b = Buffer.from(payloadHex, "hex");
  if (b.length === 0) return "";
  expect(b[0]).toBe(0x0a);
  let len = 0;
  let shift = 0;
  let i = 1;
  for (;;) {
    const byte = b[i++] as number;
    len |= (byte & 0x7f) << shift;
    shift += 7;
    if (byte < 0x80) break;
  }
  expect(b.length).toBe(i + len);
  return b.subarray(i, i + len).toString("utf8");
}

describe("Go ttrpc client -> GetIPTables / SetIPTables", () => {
  let ns: Netns;
  let agent: RunningAgent;

  beforeAll(async () => {
    goPrograms();
    ns = await Netns.create("nt-ipt-go");
    agent = await ns.startAgent();
  });
  afterAll(async () => {
    await agent?.stop();
    await ns?.remove();
  });

  const call = (method: string, payload: number[]) =>
    goClient(agent.socket, [{ service: "grpc.AgentService", method, payload: hex(payload) }]);

  it("SetIPTables (IPv4, then IPv6) sets the rules; GetIPTables returns iptables-save's text", async () => {
    const v4 = rulesFixture("mesh-istio.rules");
    const v6 = rulesFixture("mesh-istio6.rules");
    const [set4] = await call("SetIPTables", bytesField(2, Buffer.from(v4)));
    expect(set4?.results?.[0]).toEqual({ code: 0, message: "", payload: "" });
    const [set6] = await call("SetIPTables", [0x08, 0x01, ...bytesField(2, Buffer.from(v6))]);
    expect(set6?.results?.[0]?.code).toBe(0);
    expect(rulesIn(ns.name, 4)).toEqual(normaliseRules(v4));
    expect(rulesIn(ns.name, 6)).toEqual(normaliseRules(v6));

    const [get4] = await call("GetIPTables", []);
    const [get6] = await call("GetIPTables", [0x08, 0x01]);
    expect(get4?.results?.[0]?.code).toBe(0);
    expect(normaliseRules(responseData(get4?.results?.[0]?.payload ?? ""))).toEqual(
      normaliseRules(v4),
    );
    expect(normaliseRules(responseData(get6?.results?.[0]?.payload ?? ""))).toEqual(
      normaliseRules(v6),
    );
  });

  it("a malformed input is INVALID_ARGUMENT with the line number, the rules unchanged", async () => {
    const before = rulesIn(ns.name);
    const [step] = await call(
      "SetIPTables",
      bytesField(2, Buffer.from("*nat\n-A OUTPUT -p tcp -j REDIRECT --to-ports 99999\nCOMMIT\n")),
    );
    expect(step?.results?.[0]).toEqual({
      code: Code.INVALID_ARGUMENT,
      message: "data: iptables-restore: line 2: Port `99999' not valid",
      payload: "",
    });
    expect(rulesIn(ns.name)).toEqual(before);
  });
});
