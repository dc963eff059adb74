/**
 * Faults in the middle of UpdateRoutes, against dist/netagent in a fresh
 * netns: iproute2 dying on batch line k (a stand-in that applies lines
 * before k through the real `ip -batch`, then is killed), a gateway the
 * kernel refuses at line k, a link removed while the batch runs, the client
 * going away mid-call, and SIGTERM mid-call. Each time the table ends either
 * exactly as requested or exactly as before (`ip -json` byte-identical), a
 * refusal names the failing route, and the next call works.
 */
import { existsSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService, type UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import type { Route } from "../../src/gen/types_pb";
import { Code, codeName, TtrpcError } from "../../src/ttrpc/codes";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { dyingIp, gatedIp } from "./fake-ip";
import { waitForResident } from "./ip-standin/log";

type RouteInit = Partial<Omit<Route, "$typeName">>;

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A netns with eth0 (10.1.1.2/24) and eth1 (192.0.2.2/24), an agent in it, and a client. */
async function setup(opts: { ipBin?: string; logLevel?: string; ipSession?: string } = {}) {
  const ns = await Netns.create("nt-fault");
  cleanup.push(() => ns.remove());
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0d:01" });
  await ns.veth("eth1", "peer1", { mac: "02:00:00:00:0d:02" });
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  await ns.ip("addr", "add", "192.0.2.2/24", "dev", "eth1");
  await ns.ip("addr", "add", "fd00:1::2/64", "dev", "eth0", "nodad");
  const agent = await startHardenedAgent({
    netns: ns,
    args: ["--log-level", opts.logLevel ?? "warn", "--ip-session", opts.ipSession ?? "on"],
    ...(opts.ipBin ? { ipBin: opts.ipBin } : {}),
  });
  cleanup.push(() => agent.stop());
  const client = await AgentClient.connect(`unix://${agent.socket}`);
  cleanup.push(() => client.close());
  if (opts.ipBin && (opts.ipSession ?? "on") === "on") {
    // So that a fault hits the resident ip, not a one-shot one (ip-standin/log.ts).
    await waitForResident(opts.ipBin, () => client.unary(AgentService.method.listInterfaces, {}));
  }
  const update = (routes: RouteInit[], c = client, timeoutMs = 60_000) => {
    const req: MessageInitShape<typeof UpdateRoutesRequestSchema> = { routes: { Routes: routes } };
    return c.unary(AgentService.method.updateRoutes, req, { timeoutMs });
  };
  return { ns, agent, client, update };
}

async function refusal(p: Promise<unknown>): Promise<TtrpcError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected the call to fail").toBeInstanceOf(TtrpcError);
  return err as TtrpcError;
}

/** n host routes via 10.1.1.1 on eth0 (and every 4th via 192.0.2.1 on eth1). */
function manyRoutes(n: number, base = 100): RouteInit[] {
  return Array.from({ length: n }, (_, i) => ({
    dest: `10.${base + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`,
    ...(i % 4 === 3
      ? { gateway: "192.0.2.1", device: "eth1" }
      : { gateway: "10.1.1.1", device: "eth0" }),
  }));
}

const countVia = async (ns: Netns) =>
  (await ns.ip("route", "show", "table", "main")).split("\n").filter((l) => l.includes(" via "))
    .length;

describe("iproute2 failing in the middle of a plan", () => {
  // On: the plan is an exchange with the resident ip, which dies; off: a process of its own.
  it.each(["on", "off"])(
    "a stand-in ip killed on batch line k (k = 1, 2, 7, 40), --ip-session %s: restored byte-identical, next call works",
    async (ipSession) => {
      const ks = [1, 2, 7, 40];
      let injected = 0;
      for (const k of ks) {
        const dir: TempDir = tempDir("netagent-fault-");
        cleanup.push(() => dir.remove());
        const dying = dyingIp(dir, k);
        const { ns, update } = await setup({ ipBin: dying.bin, ipSession });
        writeFileSync(dying.armed, "");
        // A table to come back to: what an earlier call set up.
        unlinkSync(dying.armed);
        await update([{ dest: "198.51.100.0/24", gateway: "10.1.1.1", device: "eth0" }]);
        writeFileSync(dying.armed, "");
        const before = await ns.routeDump();
        const err = await refusal(update(manyRoutes(60)));
        injected++;
        expect(dying.deaths()).toBe(1);
        // On, the resident ip died (it had answered this and the last call's reads); off, a fresh one.
        const answered = dying.answeredBeforeDeath()[0] as number;
        if (ipSession === "on") expect(answered).toBeGreaterThan(0);
        else expect(answered).toBe(0);
        // The failure is reported as the tool's, not the request's.
        expect(err.code, err.message).toBe(Code.INTERNAL);
        expect(err.message).toMatch(/ip was killed by SIGKILL before it finished/);
        if (k === 1) console.log(`ip killed on line ${k}: ${err.code} ${err.message}`);
        expect(await ns.routeDump()).toBe(before);
        // The next call works (ip healthy again) and applies exactly what it asks.
        unlinkSync(dying.armed);
        await update(manyRoutes(60));
        expect(await countVia(ns)).toBe(60);
        expect(existsSync(dying.armed)).toBe(false);
        for (const f of cleanup.splice(0).reverse()) await f();
      }
      expect(injected).toBe(ks.length);
    },
    110_000,
  );

  it("a gateway the kernel refuses on line k: restored byte-identical, the answer names that route", async () => {
    const { ns, update } = await setup();
    await update([{ dest: "198.51.100.0/24", gateway: "10.1.1.1", device: "eth0" }]);
    for (const k of [0, 1, 25, 199]) {
      const before = await ns.routeDump();
      const routes = manyRoutes(200);
      routes[k] = { dest: "203.0.113.0/24", gateway: "172.31.9.9", device: "eth0" };
      const err = await refusal(update(routes));
      expect(err.code).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toMatch(/^route 203\.0\.113\.0\/24 via 172\.31\.9\.9 dev eth0: /);
      expect(await ns.routeDump()).toBe(before);
    }
    await update(manyRoutes(200));
    expect(await countVia(ns)).toBe(200);
  }, 60_000);

  it("a link removed while the batch runs: the other links' routes restored exactly, the failing route named", async () => {
    const { ns, update } = await setup({ logLevel: "info" });
    await update([{ dest: "198.51.100.0/24", gateway: "10.1.1.1", device: "eth0" }]);
    const without = (dump: string) =>
      dump
        .split("\n")
        .map((doc) =>
          JSON.stringify(
            (JSON.parse(doc || "[]") as { dev?: string }[]).filter(
              (r) => r.dev !== "eth1" && r.dev !== "peer1",
            ),
          ),
        )
        .join("\n");
    const before = without(await ns.routeDump());
    // Long enough that the link goes while ip is still working through it.
    const call = refusal(update(manyRoutes(40_000)));
    await waitFor(async () => (await countVia(ns)) > 500, {
      timeoutMs: 30_000,
      intervalMs: 5,
      what: "the batch to be under way",
    });
    await ns.ip("link", "del", "eth1");
    const err = await call;
    expect(err.message).toMatch(/^route 10\.\d+\.\d+\.\d+\/32 via 192\.0\.2\.1 dev eth1: /);
    expect(await countVia(ns)).toBe(1);
    const after = without(await ns.routeDump());
    expect(after).toBe(before);
    await update(manyRoutes(100).filter((r) => r.device === "eth0"));
    expect(await countVia(ns)).toBe(75);
  }, 110_000);
});

describe("the caller going away in the middle of UpdateRoutes", () => {
  it("client disconnects mid-call: the update completes (or is rolled back), never half", async () => {
    const { ns, agent, update } = await setup({ logLevel: "info" });
    const before = await ns.routeDump();
    const other = await AgentClient.connect(`unix://${agent.socket}`);
    const n = 30_000;
    const call = update(manyRoutes(n), other).catch(() => "gone");
    await waitFor(async () => (await countVia(ns)) > 500, {
      timeoutMs: 30_000,
      intervalMs: 5,
      what: "the batch to be under way",
    });
    other.close();
    expect(await call).toBe("gone");
    // Done when the agent says so: updated, or restored after a failure.
    await waitFor(() => /routes updated|restored state/.test(agent.child.stderr), {
      timeoutMs: 60_000,
      what: "the interrupted update to finish",
    });
    const count = await countVia(ns);
    if (agent.child.stderr.includes("routes updated")) expect(count).toBe(n);
    else expect(await ns.routeDump()).toBe(before);
    // And the agent serves the next call on a fresh connection.
    await update([]);
    expect(await ns.routeDump()).toBe(before);
  }, 110_000);

  // 2,000 routes go to a one-shot ip; 300 are an exchange with the resident ip.
  it.each([
    [2_000, "a one-shot ip"],
    [300, "the resident ip"],
  ])(
    "SIGTERM mid-call, the update of %i routes (%s) outlasting the grace period: it is cancelled and rolled back before the agent exits",
    async (n, which) => {
      const dir = tempDir("netagent-fault-");
      cleanup.push(() => dir.remove());
      const gated = gatedIp(dir);
      const { ns, agent, update } = await setup({
        logLevel: "info",
        ipBin: gated.bin,
      });
      const before = await ns.routeDump();
      const call = update(manyRoutes(n), undefined, 100_000).then(
        () => "answered",
        (e: TtrpcError) => `failed: ${codeName(e.code)} ${e.message}`,
      );
      await waitFor(() => existsSync(gated.halfway), { what: "the batch to be half applied" });
      // How many exchanges the stuck process had answered before: the resident had.
      const answered = Number(readFileSync(gated.halfway, "utf8"));
      if (which === "the resident ip") expect(answered).toBeGreaterThan(0);
      else expect(answered).toBe(0);
      const exited = agent.child.stop("SIGTERM", 100_000);
      // ip is still stuck halfway when the 5 s grace period ends: the call is
      // cancelled, its ip killed and the half-applied table restored.
      await waitFor(
        () => agent.child.stderr.includes("calls still running after the grace period"),
        {
          timeoutMs: 20_000,
          what: "the grace period to end",
        },
      );
      const exit = await exited;
      // The table at the moment the agent is gone is final: as before the call.
      const atExit = await countVia(ns);
      console.log(
        `SIGTERM mid-update: exit ${JSON.stringify(exit)}, ${atExit} of ${n} routes, call ${await call}`,
      );
      expect(exit).toEqual({ code: 0, signal: null });
      expect(await ns.routeDump()).toBe(before);
      expect(await call).toMatch(/^failed: UNAVAILABLE .*agent shutting down/);
      expect(agent.child.stderr).toMatch(/restored state[\s\S]*"stopped","clean":true/);
    },
    110_000,
  );
});
