/**
 * Front mode in a real VM: our guest image built with --front (rootfs/
 * front.ts) booted under QEMU, init starting the Go stand-in upstream and
 * netagent in front of it (netagent.upstream= from boot.json), driven over
 * the virtio-serial agent channel by containerd's Go client. The stand-in's
 * record (/run/upstream.log) and the guest's network are read independently
 * through the debug shell. The session (the client's answers beside the
 * record) is printed and written to dist/front-vm-transcript.txt.
 */
import { rmSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SHELL_PROMPT } from "../../rootfs/manifest";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { SERIAL_PORT_NAME } from "../../src/host/vm/qemu-args";
import { Vm } from "../../src/host/vm/vm";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { eth0Calls } from "../helpers/front-calls";
import { type GoCallResult, type GoStep, type GoStepResult, goClient } from "../helpers/go";
import {
  control,
  hex,
  pattern,
  sha256Hex,
  TEST_SERVICE,
  type UpstreamEvent,
} from "../helpers/upstream";
import { ensureFrontImage, snapshotFrontImage } from "./front-image";

const MAC = "52:54:00:23:00:01";
const BOOT_TIMEOUT_MS = 180_000;
const IP = "/sbin/ip";

let vm: Vm;
let imageDir: string;
let socket: string;
const transcript: string[] = [];

beforeAll(async () => {
  ensureFrontImage();
  const snap = snapshotFrontImage();
  imageDir = snap.dir;
  vm = await Vm.start({
    boot: snap.boot,
    mac: MAC,
    debugConsole: true,
    channel: "serial",
    // In front mode netagent never reads agent.server_addr= (the runner's):
    // the serial port is its own parameter.
    extraCmdline: [`netagent.listen=serial://${SERIAL_PORT_NAME}`],
    onNote: (line) => console.log(`vm: ${line}`),
  });
  await vm.console.waitFor(SHELL_PROMPT, BOOT_TIMEOUT_MS);
  // SERVING is the stand-in's answer, forwarded: the agent behind is up.
  const client = await vm.connect(BOOT_TIMEOUT_MS);
  try {
    const deadline = performance.now() + BOOT_TIMEOUT_MS;
    for (;;) {
      try {
        const r = await client.unary(Health.method.check, {}, { timeoutMs: 10_000 });
        if (r.status === HealthCheckResponse_ServingStatus.SERVING) break;
      } catch (err) {
        const retry = err instanceof TtrpcError && performance.now() < deadline;
        if (!retry) throw new Error(`${(err as Error).message}; console:\n${vm.console.tail()}`);
      }
    }
  } finally {
    client.close();
  }
  socket = vm.agentAddress.replace(/^unix:\/\//, "");
}, BOOT_TIMEOUT_MS + 60_000);

afterAll(async () => {
  if (transcript.length > 0) {
    const text = `${transcript.join("\n")}\n`;
    console.log(text);
    writeFileSync("dist/front-vm-transcript.txt", text);
  }
  if (vm) await vm.stop();
  if (imageDir) rmSync(imageDir, { recursive: true, force: true });
}, 30_000);

/** One Go client connection through the VM's serial channel; its steps and answers go to the transcript. */
async function session(title: string, steps: GoStep[]): Promise<GoStepResult[]> {
  const results = await goClient(socket, steps, { timeoutMs: 120_000 });
  transcript.push(`== caller (containerd's Go client over virtio-serial): ${title}`);
  steps.forEach((s, i) => {
    const r = results[i]?.results?.[0];
    const payload =
      r?.payloadSha256 !== undefined
        ? `${r.payloadLen} bytes sha256 ${r.payloadSha256}`
        : `${(r?.payload ?? "").slice(0, 48)}${(r?.payload ?? "").length > 48 ? "..." : ""}`;
    transcript.push(
      `${s.service}/${s.method}${s.timeoutMs ? ` (deadline ${s.timeoutMs} ms)` : ""}: code ${r?.code}${r?.message ? ` "${r.message.slice(0, 80)}"` : ""} payload ${payload}`,
    );
  });
  return results;
}

async function upstreamRecord(): Promise<UpstreamEvent[]> {
  const { lines } = await vm.console.run("cat /run/upstream.log", 30_000);
  const events: UpstreamEvent[] = [];
  for (const l of lines) {
    try {
      events.push(JSON.parse(l.trim()) as UpstreamEvent);
    } catch {
      // a kernel message in the line
    }
  }
  return events;
}

/**
 * The one connection's calls, in order: Health's Check and Version, the
 * test service's Echo, Answer and Fail, an unknown service, CreateSandbox
 * (all forwarded to the stand-in), the three network calls front mode
 * serves itself, and a Sleep the caller closes; `size` is Answer's
 * payload.
 */
function oneConnection(): { steps: GoStep[]; size: number } {
  const { iface, routes } = eth0Calls(MAC);
  const size = 1 << 20;
  const steps: GoStep[] = [
    { service: "grpc.Health", method: "Check", timeoutMs: 30_000 },
    { service: "grpc.Health", method: "Version" },
    {
      service: TEST_SERVICE,
      method: "Echo",
      patternLen: 200_000,
      patternSeed: 9,
      hashOnly: true,
      timeoutMs: 60_000,
      metadata: [
        ["b", "1"],
        ["a", "2"],
      ],
    },
    {
      service: TEST_SERVICE,
      method: "Answer",
      payload: hex(control({ 1: size, 2: 4 })),
      hashOnly: true,
      timeoutMs: 60_000,
    },
    {
      service: TEST_SERVICE,
      method: "Fail",
      payload: hex(
        control({
          1: Code.FAILED_PRECONDITION,
          2: "from the agent behind\nline two",
          3: Uint8Array.of(1, 2, 3),
        }),
      ),
      withStatus: true,
    },
    { service: "grpc.NoSuchService", method: "Check" },
    { service: "grpc.AgentService", method: "CreateSandbox", payload: "2a0473616e64" },
    {
      service: "grpc.AgentService",
      method: "UpdateInterface",
      payload: hex(iface),
      timeoutMs: 60_000,
    },
    {
      service: "grpc.AgentService",
      method: "UpdateRoutes",
      payload: hex(routes),
      timeoutMs: 60_000,
    },
    { service: "grpc.AgentService", method: "ListRoutes", timeoutMs: 60_000 },
    {
      service: TEST_SERVICE,
      method: "Sleep",
      payload: hex(control({ 1: 60_000, 2: "closed by the caller" })),
      closeAfterMs: 2000,
    },
  ];
  return { steps, size };
}

/** The Go client's answers, call by call (`r`, in the order of {@link oneConnection}). */
function expectAnswers(r: (GoCallResult | undefined)[], size: number): void {
  expect(r[0]).toEqual({ code: 0, message: "", payload: "0801" });
  expect(Buffer.from(r[1]?.payload ?? "", "hex").toString("latin1")).toContain("stand-in");
  expect(r[2]).toMatchObject({
    code: 0,
    payloadLen: 200_000,
    payloadSha256: sha256Hex(pattern(200_000, 9)),
  });
  expect(r[3]).toMatchObject({
    code: 0,
    payloadLen: size,
    payloadSha256: sha256Hex(pattern(size, 4)),
  });
  expect(r[4]?.code).toBe(Code.FAILED_PRECONDITION);
  expect(r[4]?.message).toBe("from the agent behind\nline two");
  expect(r[4]?.status).toContain(Buffer.from("netagent.test.Detail").toString("hex"));
  expect(r[5]).toMatchObject({ code: Code.UNIMPLEMENTED, message: "service grpc.NoSuchService" });
  expect(r[6]?.code).toBe(0);
  expect(r.slice(7, 10).map((x) => x?.code)).toEqual([0, 0, 0]);
  expect(r[10]?.code).not.toBe(0);
}

/** The network calls served in the guest, read through the debug shell. */
async function expectGuestNetwork(): Promise<void> {
  const addrs = await vm.console.runJson<{ ifname: string; addr_info: { local: string }[] }[]>(
    `${IP} -json addr show eth0`,
  );
  expect(addrs[0]?.addr_info.map((a) => a.local)).toContain("10.23.0.2");
  const table = await vm.console.runJson<{ dst: string; gateway?: string }[]>(
    `${IP} -json route show`,
  );
  expect(table).toContainEqual(
    expect.objectContaining({ dst: "10.99.0.0/16", gateway: "10.23.0.1" }),
  );
}

/**
 * The stand-in's record, read in the guest: every forwarded call reached it
 * with its bytes, metadata and deadline, none of the network calls did, and
 * the Sleep the caller closed was cancelled there.
 */
async function expectUpstreamRecord(): Promise<void> {
  let events = await upstreamRecord();
  for (let i = 0; i < 50 && !events.some((e) => e.event === "sleep-ended"); i++) {
    // not a wait: the interval of a poll bounded at 50 reads of the stand-in's record
    await new Promise((res) => setTimeout(res, 200));
    events = await upstreamRecord();
  }
  transcript.push("== the stand-in upstream's record in the guest (/run/upstream.log)");
  for (const e of events) transcript.push(JSON.stringify(e));
  const requests = events.filter((e) => e.event === "request");
  const methods = requests.map((e) => `${e.service}/${e.method}`);
  expect(methods).toEqual(
    expect.arrayContaining([
      "grpc.Health/Check",
      "grpc.Health/Version",
      `${TEST_SERVICE}/Echo`,
      `${TEST_SERVICE}/Answer`,
      `${TEST_SERVICE}/Fail`,
      "grpc.NoSuchService/Check",
      "grpc.AgentService/CreateSandbox",
      `${TEST_SERVICE}/Sleep`,
    ]),
  );
  expect(methods.filter((m) => /UpdateInterface|UpdateRoutes|ListRoutes/.test(m))).toEqual([]);
  const echo = requests.find((e) => e.method === "Echo");
  expect(echo).toMatchObject({
    payloadLen: 200_000,
    payloadSha256: sha256Hex(pattern(200_000, 9)),
  });
  expect(echo?.metadata).toEqual([
    ["b", "1"],
    ["a", "2"],
  ]);
  expect(echo?.timeoutNano).toBeGreaterThan(0);
  expect(echo?.timeoutNano).toBeLessThanOrEqual(60_000_000_000);
  const ended = events.find((e) => e.event === "sleep-ended");
  expect(ended?.how).toBe("cancelled");
  expect(ended?.afterMs).toBeLessThan(30_000);
}

describe("front mode in a QEMU guest, over virtio-serial", () => {
  it("forwards byte for byte, serves the network itself, and a closed caller cancels at the upstream", async () => {
    const { steps, size } = oneConnection();
    const r = (await session("one connection", steps)).map((s) => s.results?.[0]);
    expectAnswers(r, size);
    await expectGuestNetwork();
    await expectUpstreamRecord();
  }, 300_000);
});
