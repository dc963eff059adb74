/**
 * The policy's running phase in front mode, with containerd's Go ttrpc
 * client in front of dist/netagent --upstream and the Go stand-in agent
 * behind: the pause container's start does not begin it; the first
 * workload container's StartContainer (annotation
 * io.kubernetes.cri.container-type = container) answered OK does, after the
 * settling time; then a change is refused (the guest unchanged by `ip
 * -json`), a call that changes nothing is not, and an agent restarted on the
 * same state directory is still in the running phase.
 */
import { writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UpdateInterfaceRequestSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { Code } from "../../src/ttrpc/codes";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import { type RunningUpstream, startUpstream } from "../helpers/upstream";
import { waitFor } from "../helpers/wait";

const MAC = "02:00:00:00:36:01";
const SETTLE_MS = 5_000;
let ns: Netns;
let wire: Netns;
let dir: TempDir;
let upstream: RunningUpstream;
let front: RunningAgent;

const policy = {
  netagentPolicy: 1,
  interfaces: { macs: [MAC], names: ["eth0"], max: 1, mtu: { min: 1500, max: 1500 } },
  addresses: {
    ipv4: { within: ["10.9.0.0/24"] },
    ipv6: { within: ["fe80::/64"] },
    perInterface: 2,
  },
  routes: {
    destinations: { exact: ["0.0.0.0/0", "10.9.0.0/24", "198.51.100.0/24"] },
    gateways: ["10.9.0.1/32"],
  },
  reads: true,
  phases: { settleMs: SETTLE_MS, running: [] },
};

/** Protobuf by hand: field `no` as a length-delimited value. */
function field(no: number, value: Uint8Array | string): Buffer {
  const bytes = typeof value === "string" ? Buffer.from(value) : Buffer.from(value);
  return Buffer.concat([Buffer.from([(no << 3) | 2, bytes.length]), bytes]);
}
/** CreateContainerRequest {container_id, OCI {Annotations {container-type: type}}}. */
const createContainer = (id: string, type: string) => {
  const entry = Buffer.concat([field(1, "io.kubernetes.cri.container-type"), field(2, type)]);
  return Buffer.concat([
    field(1, id),
    field(6, Buffer.concat([field(1, "1.0.2"), field(7, entry)])),
  ]);
};
const startContainer = (id: string) => field(1, id);

const call = (method: string, payload: Uint8Array) =>
  goClient(front.socket, [
    { service: "grpc.AgentService", method, payload: Buffer.from(payload).toString("hex") },
  ]).then((s) => s[0]?.results?.[0]);
const routes = (dests: [string, string][]) =>
  toBinary(
    UpdateRoutesRequestSchema,
    create(UpdateRoutesRequestSchema, {
      routes: {
        Routes: dests.map(([dest, gateway]) => ({
          dest,
          gateway,
          device: "eth0",
          family: IPFamily.v4,
          scope: gateway === "" ? 253 : 0,
        })),
      },
    }),
  );
const setUp = routes([
  ["10.9.0.0/24", ""],
  ["0.0.0.0/0", "10.9.0.1"],
]);
const changed = routes([
  ["10.9.0.0/24", ""],
  ["0.0.0.0/0", "10.9.0.1"],
  ["198.51.100.0/24", "10.9.0.1"],
]);
const table = () => ns.ip("-json", "route", "show", "table", "main");

beforeAll(async () => {
  goPrograms();
  dir = tempDir("netagent-front-policy-");
  ns = await Netns.create("nt-fpol");
  wire = await Netns.create("nt-fpolw");
  await ns.veth("eth0", "w0", { mac: MAC, peerNs: wire });
  writeFileSync(dir.join("policy.json"), JSON.stringify(policy));
  upstream = await startUpstream(dir.join("upstream.sock"), dir.join("upstream.log"));
  front = await startFront();
}, 60_000);

function startFront(): Promise<RunningAgent> {
  return startAgent({
    netns: ns,
    stateDir: dir.join("state"),
    args: ["--upstream", `unix://${upstream.socket}`, "--policy", dir.join("policy.json")],
  });
}

afterAll(async () => {
  await front?.stop();
  await upstream?.stop();
  await ns?.remove();
  await wire?.remove();
  dir?.remove();
});

describe("front mode: the policy's running phase", () => {
  it("set-up: the pod's network goes in, the pause container's start changes nothing", async () => {
    const iface = toBinary(
      UpdateInterfaceRequestSchema,
      create(UpdateInterfaceRequestSchema, {
        interface: {
          hwAddr: MAC,
          name: "eth0",
          mtu: 1500n,
          IPAddresses: [{ family: IPFamily.v4, address: "10.9.0.5", mask: "24" }],
        },
      }),
    );
    expect((await call("UpdateInterface", iface))?.code).toBe(Code.OK);
    expect((await call("CreateContainer", createContainer("pause", "sandbox")))?.code).toBe(
      Code.OK,
    );
    expect((await call("StartContainer", startContainer("pause")))?.code).toBe(Code.OK);
    expect((await call("UpdateRoutes", setUp))?.code).toBe(Code.OK);
  });

  it("the workload's start begins it after the settling time; then a change is refused, a repeat is not", async () => {
    expect((await call("CreateContainer", createContainer("app", "container")))?.code).toBe(
      Code.OK,
    );
    const started = Date.now();
    expect((await call("StartContainer", startContainer("app")))?.code).toBe(Code.OK);
    // Within the settling time (Kata's rescan after start): still set-up.
    if (Date.now() - started < SETTLE_MS / 2) {
      expect((await call("UpdateRoutes", setUp))?.code).toBe(Code.OK);
    }
    const before = await table();
    // The phase begins SETTLE_MS after the start: wait for that moment, bounded.
    await waitFor(async () => Date.now() - started > SETTLE_MS + 100, {
      what: "the settling time",
      timeoutMs: SETTLE_MS + 5_000,
    });
    const refused = await call("UpdateRoutes", changed);
    expect(refused?.code).toBe(Code.PERMISSION_DENIED);
    expect(refused?.message).toMatch(
      /^policy rule phases\.running refuses \(call\) "grpc\.AgentService\/UpdateRoutes": changes routes after the workload started/,
    );
    expect(await table()).toBe(before);
    expect((await call("UpdateRoutes", setUp))?.code).toBe(Code.OK);
    expect(await table()).toBe(before);
  });

  it("a restarted agent reads the phase back from the state directory", async () => {
    await front.stop();
    front = await startFront();
    const refused = await call("UpdateRoutes", changed);
    expect(refused?.code).toBe(Code.PERMISSION_DENIED);
    expect(refused?.message).toMatch(/^policy rule phases\.running /);
  });
});
