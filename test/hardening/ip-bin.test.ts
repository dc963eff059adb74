/**
 * Which `ip` the agent runs (as root, in the guest): only --ip-bin replaces
 * iproute2's. NETAGENT_IP_BIN in the environment is ignored: in the guest
 * the agent's environment would come from the kernel command line.
 * dist/netagent in a fresh netns, a recording stand-in, ListRoutes.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import { startHardenedAgent } from "./agent";
import { recordingIp } from "./fake-ip";

let ns: Netns;
const dirs: TempDir[] = [];

beforeAll(async () => {
  ns = await Netns.create("nt-ipbin");
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0f:01" });
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
});

afterAll(async () => {
  await ns?.remove();
  for (const d of dirs) d.remove();
});

async function listRoutesWith(opts: { env?: Record<string, string>; ipBin?: string }) {
  const agent = await startHardenedAgent({ netns: ns, args: ["--log-level", "warn"], ...opts });
  try {
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    try {
      return await client.unary(AgentService.method.listRoutes, {}, { timeoutMs: 30_000 });
    } finally {
      client.close();
    }
  } finally {
    await agent.stop();
  }
}

it("ignores NETAGENT_IP_BIN in its environment", async () => {
  const recorder = recordingIp(newDir());
  const r = await listRoutesWith({ env: { NETAGENT_IP_BIN: recorder.bin } });
  // Answered by the real ip, and the stand-in never ran.
  expect(r.Routes.map((x) => x.dest)).toContain("10.1.1.0/24");
  expect(recorder.calls()).toEqual([]);
});

it("runs the --ip-bin stand-in", async () => {
  const recorder = recordingIp(newDir());
  const r = await listRoutesWith({ ipBin: recorder.bin });
  expect(r.Routes.map((x) => x.dest)).toContain("10.1.1.0/24");
  expect(recorder.calls().length).toBeGreaterThan(0);
});

function newDir(): TempDir {
  const d = tempDir("netagent-ipbin-");
  dirs.push(d);
  return d;
}
