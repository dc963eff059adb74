/**
 * Front mode, end to end with containerd's Go ttrpc on both sides:
 * containerd's Go client calls dist/netagent --upstream (in its own netns),
 * in front of the Go stand-in upstream (test/interop/go/ttrpc-upstream),
 * which records every request it receives as it came off the wire. The
 * record is the independent witness of what was forwarded; the network
 * calls are checked with `ip -json` in the netns.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AddARPNeighborsRequestSchema,
  ListRoutesRequestSchema,
  MetricsSchema,
} from "../../src/gen/agent_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { Code } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { eth0Calls } from "../helpers/front-calls";
import { type GoStep, goClient, goPrograms } from "../helpers/go";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import {
  control,
  hex,
  pattern,
  type RunningUpstream,
  sha256Hex,
  startUpstream,
  TEST_SERVICE,
} from "../helpers/upstream";
import { waitFor } from "../helpers/wait";

const MAC = "02:00:00:00:23:01";
let ns: Netns;
let wire: Netns;
let dir: TempDir;
let upstream: RunningUpstream;
let front: RunningAgent;

beforeAll(async () => {
  goPrograms();
  dir = tempDir("netagent-front-");
  ns = await Netns.create("nt-front");
  wire = await Netns.create("nt-fwire");
  await ns.veth("eth0", "w0", { mac: MAC, peerNs: wire });
  upstream = await startUpstream(dir.join("upstream.sock"), dir.join("upstream.log"));
  front = await ns.startAgent(["--upstream", `unix://${upstream.socket}`]);
}, 60_000);

afterAll(async () => {
  await front?.stop();
  await upstream?.stop();
  await ns?.remove();
  await wire?.remove();
  dir?.remove();
});

const call = (step: GoStep) => goClient(front.socket, [step]).then((s) => s[0]?.results?.[0]);
const direct = (step: GoStep) => goClient(upstream.socket, [step]).then((s) => s[0]?.results?.[0]);
const requestsFor = (method: string) => upstream.requests().filter((r) => r.method === method);
/** A google.rpc.Status {code, message} as Go's server encodes it (short message). */
const statusHex = (code: number, message: string) =>
  hex(Uint8Array.from([0x08, code, 0x12, message.length, ...Buffer.from(message)]));

describe("front mode: forwarded calls", () => {
  it("Check and Version are the upstream's, and reach it", async () => {
    const before = requestsFor("Check").length;
    expect(await call({ service: "grpc.Health", method: "Check" })).toEqual({
      code: 0,
      message: "",
      payload: "0801",
    });
    const version = await call({ service: "grpc.Health", method: "Version" });
    expect(Buffer.from(version?.payload ?? "", "hex").toString("latin1")).toContain("stand-in");
    expect(requestsFor("Check").length).toBe(before + 1);
    expect(requestsFor("Version").at(-1)?.service).toBe("grpc.Health");
  });

  it("a 200 KB request and a 1 MiB answer pass byte for byte", async () => {
    const request = pattern(200_000, 7);
    const echoed = await call({
      service: TEST_SERVICE,
      method: "Echo",
      patternLen: 200_000,
      patternSeed: 7,
      hashOnly: true,
    });
    expect(echoed).toMatchObject({
      code: 0,
      payloadLen: 200_000,
      payloadSha256: sha256Hex(request),
    });
    const seen = requestsFor("Echo").at(-1);
    expect(seen).toMatchObject({ payloadLen: 200_000, payloadSha256: sha256Hex(request) });

    const size = 1 << 20;
    const answer = await call({
      service: TEST_SERVICE,
      method: "Answer",
      payload: hex(control({ 1: size, 2: 5 })),
      hashOnly: true,
    });
    expect(answer).toMatchObject({
      code: 0,
      payloadLen: size,
      payloadSha256: sha256Hex(pattern(size, 5)),
    });
  });

  it("carries metadata in order and what is left of the deadline", async () => {
    const metadata: [string, string][] = [
      ["traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
      ["b", "1"],
      ["a", "x"],
      ["b", "2"],
    ];
    await call({
      service: TEST_SERVICE,
      method: "Echo",
      payload: "0a01aa",
      metadata,
      timeoutMs: 5000,
    });
    const withDeadline = requestsFor("Echo").at(-1);
    expect(withDeadline?.metadata).toEqual(metadata);
    expect(withDeadline?.timeoutNano).toBeGreaterThan(4_000_000_000);
    expect(withDeadline?.timeoutNano).toBeLessThanOrEqual(5_000_000_000);

    await call({ service: TEST_SERVICE, method: "Echo", payload: "0a01bb" });
    const without = requestsFor("Echo").at(-1);
    expect(without?.timeoutNano).toBe(0);
    expect(without?.metadata).toEqual([]);
  });

  it("a deadline passes at the upstream as the caller's would", async () => {
    const result = await call({
      service: TEST_SERVICE,
      method: "Sleep",
      payload: hex(control({ 1: 20_000, 2: "deadline" })),
      timeoutMs: 300,
    });
    // Whichever comes first: the Go client's own deadline (its error, code 2
    // here) or the upstream's answer at its deadline, passed on unchanged.
    expect(result?.message, JSON.stringify(result)).toBe("context deadline exceeded");
    expect([Code.UNKNOWN, Code.DEADLINE_EXCEEDED], JSON.stringify(result)).toContain(result?.code);
    const ended = await waitFor(() =>
      upstream.events().find((e) => e.event === "sleep-ended" && e.tag === "deadline"),
    );
    expect(ended.how).toBe("deadline");
    expect(ended.afterMs).toBeLessThan(5000);
  });
});

describe("front mode: forwarded calls: cancels, unknown names, status texts, interleaving", () => {
  it("closing the caller's connection cancels its forwarded calls at the upstream", async () => {
    const tag = "closed-by-caller";
    const results = await goClient(front.socket, [
      {
        service: TEST_SERVICE,
        method: "Sleep",
        payload: hex(control({ 1: 30_000, 2: tag })),
        n: 3,
        c: 3,
        closeAfterMs: 300,
      },
    ]);
    expect(results[0]?.results?.every((r) => r.code !== 0)).toBe(true);
    const ended = await waitFor(() => {
      const e = upstream.events().filter((x) => x.event === "sleep-ended" && x.tag === tag);
      return e.length === 3 && e;
    });
    expect(ended.map((e) => e.how)).toEqual(["cancelled", "cancelled", "cancelled"]);
    for (const e of ended) expect(e.afterMs).toBeLessThan(10_000);
  });

  it("unknown services and methods get the upstream's answer, recorded there", async () => {
    const steps = await goClient(front.socket, [
      { service: "grpc.NoSuchService", method: "Check", withStatus: true },
      { service: "grpc.AgentService", method: "NoSuchMethod", withStatus: true },
      { service: "grpc.AgentService", method: "CreateSandbox", payload: "2a0473616e64" },
    ]);
    expect(steps.map((s) => s.results?.[0])).toEqual([
      {
        code: Code.UNIMPLEMENTED,
        message: "service grpc.NoSuchService",
        payload: "",
        status: statusHex(Code.UNIMPLEMENTED, "service grpc.NoSuchService"),
      },
      {
        code: Code.UNIMPLEMENTED,
        message: "method NoSuchMethod",
        payload: "",
        status: statusHex(Code.UNIMPLEMENTED, "method NoSuchMethod"),
      },
      { code: 0, message: "", payload: "" },
    ]);
    const seen = upstream.requests().map((r) => `${r.service}/${r.method}`);
    expect(seen).toContain("grpc.NoSuchService/Check");
    expect(seen).toContain("grpc.AgentService/NoSuchMethod");
    expect(requestsFor("CreateSandbox").at(-1)?.payloadSha256).toBe(
      sha256Hex(Buffer.from("2a0473616e64", "hex")),
    );
  });

  it("the upstream's status texts and details come back unchanged", async () => {
    const cases: Record<number, number | string | Uint8Array>[] = [
      {
        1: Code.FAILED_PRECONDITION,
        2: "präzise\nline two \u202e end",
        3: Uint8Array.of(1, 2, 0, 255),
      },
      // Longer than netagent's own status bound (16 KiB): not its text to cut.
      { 1: Code.INTERNAL, 2: "x".repeat(50_000) },
      { 1: 42, 2: "a code gRPC does not name" },
    ];
    for (const c of cases) {
      const step = {
        service: TEST_SERVICE,
        method: "Fail",
        payload: hex(control(c)),
        withStatus: true,
      };
      const [through, straight] = [await call(step), await direct(step)];
      expect(through?.code).toBe(c[1]);
      expect(through).toEqual(straight);
      expect(through?.message).toBe(c[2]);
    }
  });

  it("64 forwarded and 64 network calls interleaved on one connection", async () => {
    const before = requestsFor("Echo").length;
    const listRoutes = hex(toBinary(ListRoutesRequestSchema, create(ListRoutesRequestSchema)));
    const [step] = await goClient(front.socket, [
      {
        parallel: [
          {
            service: TEST_SERVICE,
            method: "Echo",
            patternLen: 4096,
            patternSeed: 3,
            hashOnly: true,
            n: 64,
            c: 32,
          },
          { service: "grpc.AgentService", method: "ListRoutes", payload: listRoutes, n: 32, c: 16 },
          { service: "grpc.AgentService", method: "ListInterfaces", n: 32, c: 16 },
        ],
      },
    ]);
    const [echo, routes, links] = step?.parts ?? [];
    expect(echo?.codes).toEqual({ "0": 64 });
    expect(new Set(echo?.results?.map((r) => r.payloadSha256))).toEqual(
      new Set([sha256Hex(pattern(4096, 3))]),
    );
    expect(routes?.codes).toEqual({ "0": 32 });
    expect(links?.codes).toEqual({ "0": 32 });
    expect(requestsFor("Echo").length).toBe(before + 64);
  });
});

describe("front mode: network calls served here", () => {
  it("the network methods are served by netagent, checked with ip, and never reach the upstream", async () => {
    const { iface, routes } = eth0Calls(MAC);
    const neighbors = toBinary(
      AddARPNeighborsRequestSchema,
      create(AddARPNeighborsRequestSchema, {
        neighbors: {
          ARPNeighbors: [
            {
              toIPAddress: { family: IPFamily.v4, address: "10.23.0.1" },
              device: "eth0",
              lladdr: "02:00:00:00:23:fe",
            },
          ],
        },
      }),
    );
    const steps = await goClient(front.socket, [
      {
        service: "grpc.AgentService",
        method: "UpdateInterface",
        payload: hex(iface),
        timeoutMs: 10_000,
      },
      {
        service: "grpc.AgentService",
        method: "UpdateRoutes",
        payload: hex(routes),
        timeoutMs: 10_000,
      },
      { service: "grpc.AgentService", method: "ListInterfaces" },
      { service: "grpc.AgentService", method: "ListRoutes" },
      { service: "grpc.AgentService", method: "AddARPNeighbors", payload: hex(neighbors) },
      { service: "grpc.AgentService", method: "GetIPTables" },
      { service: "netagent.v1.Network", method: "Get" },
    ]);
    expect(steps.map((s) => s.results?.[0]?.code)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    const addrs = await ns.json<{ ifname: string; addr_info: { local: string }[] }[]>(
      "addr",
      "show",
      "eth0",
    );
    expect(addrs[0]?.addr_info.map((a) => a.local)).toContain("10.23.0.2");
    const table = await ns.json<{ dst: string; gateway?: string }[]>("route", "show");
    expect(table).toContainEqual(
      expect.objectContaining({ dst: "10.99.0.0/16", gateway: "10.23.0.1" }),
    );

    const local = new Set([
      "UpdateInterface",
      "UpdateRoutes",
      "ListInterfaces",
      "ListRoutes",
      "AddARPNeighbors",
      "GetIPTables",
      "SetIPTables",
    ]);
    const leaked = upstream
      .requests()
      .filter(
        (r) =>
          (r.service === "grpc.AgentService" && local.has(r.method ?? "")) ||
          r.service === "netagent.v1.Network",
      );
    expect(leaked).toEqual([]);
  });
});

describe("front mode: upstream connections, metrics", () => {
  it("one upstream connection per caller connection, closed with it", async () => {
    const opens = () => upstream.events().filter((e) => e.event === "conn-open").length;
    const before = opens();
    await goClient(front.socket, [{ method: "Check" }, { method: "Check" }, { method: "Version" }]);
    await goClient(front.socket, [{ method: "Check" }]);
    expect(opens()).toBe(before + 2);
    // A caller that makes only network calls costs the upstream nothing.
    await goClient(front.socket, [{ service: "grpc.AgentService", method: "ListRoutes" }]);
    expect(opens()).toBe(before + 2);
    const conns = upstream
      .events()
      .filter((e) => e.event === "conn-open")
      .slice(-2)
      .map((e) => e.conn);
    await waitFor(() => {
      const closed = upstream
        .events()
        .filter((e) => e.event === "conn-closed")
        .map((e) => e.conn);
      return conns.every((c) => closed.includes(c));
    });
  });

  it("GetMetrics is the upstream's text with netagent's own appended", async () => {
    const before = requestsFor("GetMetrics").length;
    const result = await call({ service: "grpc.AgentService", method: "GetMetrics" });
    expect(result?.code).toBe(0);
    const text = fromBinary(MetricsSchema, Buffer.from(result?.payload ?? "", "hex")).metrics;
    // The stand-in's lines first, as it sent them, then netagent's.
    expect(text.startsWith("# HELP kata_agent_process_cpu_seconds_total")).toBe(true);
    expect(text).toContain(
      "kata_agent_process_cpu_seconds_total 0.25\n# HELP netagent_calls_total",
    );
    const echoes = upstream.requests().filter((r) => r.method === "Echo").length;
    expect(text).toContain(
      `netagent_calls_total{service="${TEST_SERVICE}",method="Echo",code="OK"} ${echoes}`,
    );
    expect(text).toMatch(
      /^netagent_calls_total\{service="grpc.AgentService",method="UpdateRoutes",code="OK"\} 1$/m,
    );
    expect(text).toMatch(/^netagent_processes_started_total\{program="ip"\} [1-9]\d*$/m);
    expect(text).toMatch(
      /^netagent_call_duration_seconds_count\{service="grpc.Health",method="Check"\} [1-9]/m,
    );
    for (const line of text.split("\n").filter((l) => l && !l.startsWith("#"))) {
      expect(line).toMatch(/^(kata_agent|netagent)_[a-z_]+(\{[^}]*\})? [0-9.e+-]+$/);
    }
    expect(requestsFor("GetMetrics").length).toBe(before + 1);
  });
});
