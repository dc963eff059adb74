/**
 * Front mode when the upstream is not there: absent at the front's start,
 * then started, then killed (SIGKILL) with a call in flight, then started
 * again. All on one connection of containerd's Go client, which steps
 * through its plan as the test kills and starts the stand-in: forwarded
 * calls fail UNAVAILABLE naming the upstream, the network methods keep
 * working, and forwarding comes back by itself.
 */
import { existsSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Code } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { goClient, goPrograms } from "../helpers/go";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import {
  control,
  hex,
  type RunningUpstream,
  startUpstream,
  TEST_SERVICE,
} from "../helpers/upstream";
import { waitFor } from "../helpers/wait";

let ns: Netns;
let dir: TempDir;
let front: RunningAgent;
const upstreams: RunningUpstream[] = [];

beforeAll(async () => {
  goPrograms();
  dir = tempDir("netagent-front-restart-");
  ns = await Netns.create("nt-frestart");
  front = await ns.startAgent(["--upstream", `unix://${dir.join("upstream.sock")}`]);
}, 60_000);

afterAll(async () => {
  await front?.stop();
  for (const u of upstreams) await u.stop();
  await ns?.remove();
  dir?.remove();
});

it("forwarded calls fail UNAVAILABLE naming the upstream while it is gone, and resume by themselves", async () => {
  const socket = dir.join("upstream.sock");
  const log = dir.join("upstream.log");
  const flag = (name: string) => dir.join(name);
  const named = `upstream unix://${socket}`;
  const sleep = hex(control({ 1: 30_000, 2: "in flight" }));
  const client = goClient(
    front.socket,
    [
      { method: "Check", touch: flag("s0") },
      { service: "grpc.AgentService", method: "ListRoutes" },
      { method: "Check", waitFor: flag("up1") },
      { service: TEST_SERVICE, method: "Sleep", payload: sleep },
      { service: TEST_SERVICE, method: "Echo", payload: "0a0101", touch: flag("s4") },
      { service: "grpc.AgentService", method: "ListRoutes" },
      { service: TEST_SERVICE, method: "Echo", payload: "0a0102", waitFor: flag("up2") },
    ],
    { timeoutMs: 60_000 },
  );

  await waitFor(() => existsSync(flag("s0")));
  upstreams.push(await startUpstream(socket, log, "first"));
  writeFileSync(flag("up1"), "");
  // Killed while the Sleep call is in flight there.
  await waitFor(() => upstreams[0]?.requests().some((r) => r.method === "Sleep"));
  await upstreams[0]?.child.kill();
  await waitFor(() => existsSync(flag("s4")));
  upstreams.push(await startUpstream(socket, log, "second"));
  writeFileSync(flag("up2"), "");

  const results = (await client).map((s) => s.results?.[0]);
  expect(results[0]?.code).toBe(Code.UNAVAILABLE);
  expect(results[0]?.message).toBe(`${named}: connect: ENOENT`);
  expect(results[1]?.code).toBe(Code.OK);
  expect(results[2]).toEqual({ code: 0, message: "", payload: "0801" });
  expect(results[3]?.code).toBe(Code.UNAVAILABLE);
  expect(results[3]?.message).toBe(`${named}: connection closed`);
  expect(results[4]?.code).toBe(Code.UNAVAILABLE);
  expect(results[4]?.message).toBe(`${named}: connect: ECONNREFUSED`);
  expect(results[5]?.code).toBe(Code.OK);
  expect(results[6]).toEqual({ code: 0, message: "", payload: "0a0102" });

  // One log for both: what each instance received.
  const requests = upstreams[1]?.requests() ?? [];
  expect(requests.map((r) => [r.instance, r.method])).toEqual([
    ["first", "Check"],
    ["first", "Sleep"],
    ["second", "Echo"],
  ]);
  expect(front.child.running).toBe(true);
});
