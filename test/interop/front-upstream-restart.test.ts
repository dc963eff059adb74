/**
 * Front mode when the upstream is not there. At start-up (netagent and
 * the agent behind start side by side): a Check sent before the upstream
 * listens waits for it, since the Kata runtime sends one Check and gives up
 * on the sandbox if it fails; one whose deadline runs out first fails
 * UNAVAILABLE naming the upstream. Later, the upstream killed (SIGKILL)
 * with a call in flight and started again: forwarded calls fail
 * UNAVAILABLE at once, the network methods keep working, and forwarding
 * comes back by itself. On connections of containerd's Go client, which
 * step through their plans as the test kills and starts the stand-in.
 */
import { existsSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Code } from "../../src/ttrpc/codes";
import { type RunningAgent, startAgent } from "../helpers/agent";
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
const fronts: RunningAgent[] = [];
const upstreams: RunningUpstream[] = [];

beforeAll(async () => {
  goPrograms();
  dir = tempDir("netagent-front-restart-");
  ns = await Netns.create("nt-frestart");
}, 60_000);

afterAll(async () => {
  for (const f of fronts) await f.stop();
  for (const u of upstreams) await u.stop();
  await ns?.remove();
  dir?.remove();
});

/** A fresh front (it has never reached its upstream) in front of `socket`. */
async function startFront(socket: string): Promise<RunningAgent> {
  const front = await startAgent({
    netns: ns,
    readyOnSocket: true,
    args: ["--upstream", `unix://${socket}`],
  });
  fronts.push(front);
  return front;
}

it("at start-up a Check waits for the upstream to listen; one whose deadline runs out fails UNAVAILABLE", async () => {
  const socket = dir.join("late.sock");
  const front = await startFront(socket);
  const sent = performance.now();
  const [short] = await goClient(front.socket, [{ method: "Check", timeoutMs: 1000 }]);
  const shortMs = performance.now() - sent;
  expect(short?.results?.[0]).toEqual({
    code: Code.UNAVAILABLE,
    message: `upstream unix://${socket}: connect: ENOENT`,
    payload: "",
  });
  // Answered before its deadline (the caller sees the front's word, not its own timeout).
  expect(shortMs).toBeLessThan(1000 + 500);
  // The Kata runtime's Check (30 s deadline), sent before the agent behind listens.
  const check = goClient(front.socket, [
    { method: "Check", timeoutMs: 30_000, touch: dir.join("late-done") },
  ]);
  // not a wait: a stretch in which the Check must stay unanswered (no agent behind yet); load only shortens it in effect
  await new Promise((r) => setTimeout(r, 500));
  expect(existsSync(dir.join("late-done"))).toBe(false);
  upstreams.push(await startUpstream(socket, dir.join("late.log"), "late"));
  const [served] = await check;
  expect(served?.results?.[0]).toEqual({ code: 0, message: "", payload: "0801" });
});

it("forwarded calls fail UNAVAILABLE naming the upstream while it is gone, and resume by themselves", async () => {
  const socket = dir.join("upstream.sock");
  const log = dir.join("upstream.log");
  const front = await startFront(socket);
  const flag = (name: string) => dir.join(name);
  const named = `upstream unix://${socket}`;
  const sleep = hex(control({ 1: 30_000, 2: "in flight" }));
  const client = goClient(
    front.socket,
    [
      { method: "Check", timeoutMs: 300, touch: flag("s0") },
      { service: "grpc.AgentService", method: "ListRoutes" },
      { method: "Check", waitFor: flag("up1") },
      { service: TEST_SERVICE, method: "Sleep", payload: sleep },
      // Sent once the first is reaped: a process being killed ends its connections before
      // it closes its listening socket, and a connect in between is taken, then closed.
      {
        service: TEST_SERVICE,
        method: "Echo",
        payload: "0a0101",
        waitFor: flag("down1"),
        touch: flag("s4"),
      },
      { service: "grpc.AgentService", method: "ListRoutes" },
      { service: TEST_SERVICE, method: "Echo", payload: "0a0102", waitFor: flag("up2") },
    ],
    { timeoutMs: 60_000 },
  );

  await waitFor(() => existsSync(flag("s0")));
  const first = await startUpstream(socket, log, "first");
  upstreams.push(first);
  writeFileSync(flag("up1"), "");
  // Killed while the Sleep call is in flight there.
  await waitFor(() => first.requests().some((r) => r.method === "Sleep"));
  await first.child.kill();
  writeFileSync(flag("down1"), "");
  await waitFor(() => existsSync(flag("s4")));
  const second = await startUpstream(socket, log, "second");
  upstreams.push(second);
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
  const requests = second.requests();
  expect(requests.map((r) => [r.instance, r.method])).toEqual([
    ["first", "Check"],
    ["first", "Sleep"],
    ["second", "Echo"],
  ]);
  expect(front.child.running).toBe(true);
});
