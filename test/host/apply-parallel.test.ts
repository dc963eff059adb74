/**
 * A large Apply's gateway routes run table by table in several ip
 * processes at once (plan-parallel.ts, ip-batch-parts.ts). Checked on a
 * real guest netns with the real iproute2, by independent reads:
 * - the runner itself, made to use two processes whatever this machine's
 *   CPUs: the guest reads as planned, and a gateway the kernel refuses in
 *   one table's process fails the run naming that line of the whole batch;
 * - the agent (two processes on a machine with two CPUs, one otherwise):
 *   bench row 12's state plus one route the kernel refuses, in table 200,
 *   fails with the kernel's words for that route, and the guest reads
 *   exactly as before (tables, rules, nexthop objects); without that route
 *   the same Apply gives every table as asked.
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { Network, RouteSchema, type State } from "../../src/gen/network_pb";
import { IpRunner } from "../../src/net/iproute/ip-runner";
import type { Route } from "../../src/net/model/model";
import { IpBatchError } from "../../src/net/parse/ip-results";
import { planApply } from "../../src/net/plan/plan-apply";
import type { TtrpcError } from "../../src/ttrpc/codes";
import { largeState } from "../support/large-state";
import { addVeth, Guest, randomMac } from "./helpers";

/** Routes of every table (not the kernel's local ones), rules and nexthop objects, as ip prints them. */
async function everything(guest: Guest): Promise<string> {
  const routes = await guest.ns.json<{ table?: string; protocol?: string }[]>(
    "route",
    "show",
    "table",
    "all",
  );
  const own = routes.filter((r) => !(r.table === "local" && r.protocol === "kernel"));
  const rules = await guest.ns.json("rule", "show");
  const nexthops = await guest.ns.json("nexthop", "show");
  return JSON.stringify({ own, rules, nexthops });
}

const tableCounts = async (guest: Guest) => {
  const routes = await guest.ns.json<{ table?: string }[]>("route", "show", "table", "all");
  const n = new Map<string, number>();
  for (const r of routes) n.set(r.table ?? "main", (n.get(r.table ?? "main") ?? 0) + 1);
  return Object.fromEntries([...n].filter(([t]) => t !== "local"));
};

let guest: Guest;
let client: AgentClient;
let macs: string[];

beforeAll(async () => {
  guest = await Guest.create();
  macs = [randomMac(), randomMac()];
  await addVeth(guest.ns, "eth0", macs[0] as string);
  await addVeth(guest.ns, "eth1", macs[1] as string);
  client = await AgentClient.connect(guest.addr);
}, 60_000);
afterAll(async () => {
  client?.close();
  await guest?.remove();
});

describe("a large Apply in parallel parts", () => {
  it("runs the runner's parts in two processes: the guest as planned, a refusal named in the whole batch", async () => {
    await client.unary(Network.method.apply, { desired: largeState(macs) }, { timeoutMs: 120_000 });
    const runner = new IpRunner({ netns: guest.ns.name, parallel: 2 });
    const read = await runner.readFullState();
    const current = { ...read, sysctls: new Map<string, string>() };
    const gateway = (table: number, n: number): Route => ({
      family: 4,
      table,
      dst: `198.18.${n >> 8}.${n & 255}/32`,
      gateway: table % 2 === 0 ? "10.0.0.1" : "10.1.0.1",
      dev: table % 2 === 0 ? "eth0" : "eth1",
      scope: 0,
      metric: 7,
      onlink: false,
      mtu: 0,
      protocol: "static",
      type: "unicast",
    });
    const added = [100, 200].flatMap((t) => Array.from({ length: 1200 }, (_, n) => gateway(t, n)));
    const desired = {
      links: [],
      // A request names no route through lo (validate-state-routes.ts).
      routes: [...read.routes.filter((r) => r.dev !== "lo"), ...added],
      rules: read.rules,
      neighbors: [],
      nexthops: read.nexthops ?? [],
      sysctls: [],
    };
    const plan = planApply(current, desired, { exact: true });
    expect(plan.batchParts?.together).toHaveLength(2);
    await runner.batchAndRead(plan.batch, {}, plan.batchParts);
    const routes = await guest.ns.json<{ dst: string; table?: string; metric?: number }[]>(
      "route",
      "show",
      "table",
      "all",
    );
    // ip prints a host route without its /32.
    const got = routes.filter((r) => r.metric === 7).map((r) => `${r.table} ${r.dst}/32`);
    expect(got.sort()).toEqual(added.map((r) => `${r.table} ${r.dst}`).sort());

    // One gateway the kernel cannot reach (not onlink, no route to it), in
    // table 300: its process's lines come after a link route and table 200's.
    const bad = { ...gateway(300, 5000), dst: "198.19.0.0/24", gateway: "10.9.9.9", dev: "eth0" };
    const link = { ...gateway(300, 0), dst: "198.20.0.0/16", gateway: undefined, scope: 253 };
    const again = await runner.readFullState();
    const more = [300, 200].flatMap((t) =>
      Array.from({ length: 1100 }, (_, n) => ({ ...gateway(t, n), metric: 8 })),
    );
    const plan2 = planApply(
      { ...again, sysctls: new Map() },
      {
        ...desired,
        routes: [
          ...again.routes.filter((r) => r.dev !== "lo"),
          link,
          ...more.slice(0, 600),
          bad,
          ...more.slice(600),
        ],
      },
      { exact: true },
    );
    expect(plan2.batchParts?.together).toHaveLength(2);
    expect(plan2.batchParts?.before).toHaveLength(1);
    const err = await runner.batchAndRead(plan2.batch, {}, plan2.batchParts).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(IpBatchError);
    const e = err as IpBatchError;
    expect(e.line).toContain("198.19.0.0/24 via 10.9.9.9");
    expect(plan2.batch[e.lineIndex as number]).toBe(e.line);
    expect(e.ipMessage).toMatch(/gateway|unreachable/i);
  }, 180_000);
});

describe("a large Apply in parallel parts: a route the kernel refuses", () => {
  it("fails an agent's Apply on a route the kernel refuses, the guest as before", async () => {
    const good: State = largeState(macs);
    await client.unary(
      Network.method.apply,
      { desired: good, exact: true },
      { timeoutMs: 120_000 },
    );
    const before = await everything(guest);
    const counts = await tableCounts(guest);
    expect(Object.keys(counts).sort()).toEqual(["100", "200", "300", "main"]);

    const bad = largeState(macs);
    // Other routes of every table change too: table 300's go to eth0.
    bad.routes = bad.routes.map((r) =>
      r.table === 300 && r.gateway === "10.1.0.1"
        ? create(RouteSchema, { ...r, gateway: "10.0.0.1", device: "eth0" })
        : r,
    );
    bad.routes.splice(
      6000,
      0,
      create(RouteSchema, {
        table: 200,
        family: 4,
        dest: "198.19.0.0/24",
        gateway: "10.9.9.9",
        device: "eth0",
      }),
    );
    const err = await client
      .unary(Network.method.apply, { desired: bad, exact: true }, { timeoutMs: 120_000 })
      .then(
        () => undefined,
        (e: unknown) => e as TtrpcError,
      );
    expect(err?.message).toMatch(/198\.19\.0\.0\/24 via 10\.9\.9\.9.*(gateway|unreachable)/i);
    expect(await everything(guest)).toBe(before);
  }, 240_000);
});
