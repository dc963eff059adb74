/**
 * UpdateRoutes against the real kernel in a fresh namespace per test, the
 * compiled agent inside it; every result read back with an independent `ip`.
 */

import type { MessageInitShape } from "@bufbuild/protobuf";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import type { UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { AgentService, type UpdateRoutesRequest } from "../../src/gen/agent_pb";
import { IPFamily, type Route } from "../../src/gen/types_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";
import { routeTable } from "./tables";

type RouteInit = Partial<Omit<Route, "$typeName">>;

let ns: Netns;
let agent: RunningAgent;
let client: AgentClient;

beforeEach(async () => {
  ns = await Netns.create("nt-routes");
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:01:01" });
  await ns.veth("eth1", "peer1", { mac: "02:00:00:00:01:02" });
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  await ns.ip("addr", "add", "192.0.2.2/24", "dev", "eth1");
  await ns.ip("addr", "add", "fd00:1::2/64", "dev", "eth0", "nodad");
  agent = await ns.startAgent();
  client = await AgentClient.connect(`unix://${agent.socket}`);
});

afterEach(async () => {
  client?.close();
  await agent?.stop();
  await ns?.remove();
});

function updateRoutes(routes: RouteInit[], timeoutMs = 20_000) {
  const req: MessageInitShape<typeof UpdateRoutesRequestSchema> = { routes: { Routes: routes } };
  return client.unary(AgentService.method.updateRoutes, req, { timeoutMs });
}

async function expectError(p: Promise<unknown>, code: Code, text: RegExp | string) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TtrpcError);
  expect((err as TtrpcError).code, (err as Error).message).toBe(code);
  expect((err as Error).message).toMatch(text);
}

describe("UpdateRoutes", () => {
  it("replaces the kernel subnet route with the gateway route (the PTP case)", async () => {
    expect(await routeTable(ns)).toContain(
      "v4 10.1.1.0/24 dev eth0 src 10.1.1.2 scope link metric 0",
    );
    await updateRoutes([
      { gateway: "10.1.1.1", device: "eth0" },
      { dest: "10.1.1.0/24", gateway: "10.1.1.1", source: "10.1.1.2", device: "eth0" },
      { dest: "10.1.1.1/32", source: "10.1.1.2", device: "eth0", scope: 253 },
    ]);
    const v4 = (await routeTable(ns)).filter((l) => l.startsWith("v4"));
    expect(v4).toEqual([
      "v4 10.1.1.0/24 via 10.1.1.1 dev eth0 src 10.1.1.2 scope global metric 0",
      "v4 10.1.1.1 dev eth0 src 10.1.1.2 scope link metric 0",
      "v4 192.0.2.0/24 dev eth1 src 192.0.2.2 scope link metric 0",
      "v4 default via 10.1.1.1 dev eth0 scope global metric 0",
    ]);
  });

  it("IPv6: deletes the superseded kernel prefix route (metric 256) once the requested one is in", async () => {
    await updateRoutes([
      { dest: "fd00:1::/64", gateway: "fd00:1::1", device: "eth0", family: IPFamily.v6 },
      { gateway: "fd00:1::1", device: "eth0", family: IPFamily.v6 },
    ]);
    const v6 = (await routeTable(ns)).filter((l) => l.startsWith("v6") && !l.includes("fe80"));
    expect(v6).toEqual([
      "v6 default via fd00:1::1 dev eth0 scope global metric 1024",
      "v6 fd00:1::/64 via fd00:1::1 dev eth0 scope global metric 1024",
    ]);
  });

  it("removes stale routes and brings back kernel routes no longer superseded", async () => {
    const before = await routeTable(ns);
    await updateRoutes([
      { dest: "10.1.1.0/24", gateway: "10.1.1.1", device: "eth0" },
      { dest: "198.51.100.0/24", gateway: "10.1.1.1", device: "eth0" },
      { dest: "203.0.113.0/24", gateway: "192.0.2.1", device: "eth1", mtu: 1400 },
    ]);
    expect(await routeTable(ns)).toContain(
      "v4 203.0.113.0/24 via 192.0.2.1 dev eth1 scope global metric 0 mtu 1400",
    );
    const reply = await updateRoutes([]);
    expect(await routeTable(ns)).toEqual(before);
    // The reply is the table read back: the kernel routes, with real destinations.
    expect(reply.Routes.map((r) => `${r.dest} ${r.device}`).sort()).toEqual(
      ["10.1.1.0/24 eth0", "192.0.2.0/24 eth1", "fd00:1::/64 eth0", ...fe80(before)].sort(),
    );
  });

  it("two links in one subnet: a request on one supersedes only its own link's kernel route", async () => {
    await ns.ip("addr", "add", "10.1.1.3/24", "dev", "eth1");
    await updateRoutes([{ dest: "10.1.1.0/24", gateway: "10.1.1.1", device: "eth0" }]);
    const v4 = (await routeTable(ns)).filter((l) => l.startsWith("v4 10.1.1.0/24"));
    expect(v4).toEqual([
      "v4 10.1.1.0/24 dev eth1 src 10.1.1.3 scope link metric 0",
      "v4 10.1.1.0/24 via 10.1.1.1 dev eth0 scope global metric 0",
    ]);
    // And back: eth0's kernel route returns, eth1's was never touched.
    await updateRoutes([]);
    expect((await routeTable(ns)).filter((l) => l.startsWith("v4 10.1.1.0/24"))).toEqual([
      "v4 10.1.1.0/24 dev eth0 src 10.1.1.2 scope link metric 0",
      "v4 10.1.1.0/24 dev eth1 src 10.1.1.3 scope link metric 0",
    ]);
  });

  it("keeps device-less routes (blackhole, unreachable, prohibit) in both families", async () => {
    await ns.ip("route", "add", "blackhole", "198.51.100.0/24");
    await ns.ip("route", "add", "unreachable", "203.0.113.0/24");
    await ns.ip("-6", "route", "add", "blackhole", "2001:db8:dead::/48");
    await ns.ip("-6", "route", "add", "prohibit", "2001:db8:beef::/48");
    const typed = async () =>
      [
        ...(await ns.json<{ type?: string; dst: string }[]>("route", "show", "table", "main")),
        ...(await ns.json<{ type?: string; dst: string }[]>(
          "-6",
          "route",
          "show",
          "table",
          "main",
        )),
      ]
        .filter((r) => r.type && r.type !== "unicast")
        .map((r) => `${r.type} ${r.dst}`)
        .sort();
    const before = await typed();
    expect(before).toHaveLength(4);
    await updateRoutes([{ gateway: "10.1.1.1", device: "eth0" }]);
    await updateRoutes([]);
    expect(await typed()).toEqual(before);
  });
});

describe("UpdateRoutes: defaults, repeated calls, rollback", () => {
  it("masks host bits, takes empty dest as the family's default, honours onlink and scope", async () => {
    await updateRoutes([
      { dest: "192.168.157.204/20", gateway: "10.1.1.1", device: "eth0" },
      { gateway: "169.254.1.1", device: "eth1", flags: 4 },
      { dest: "10.9.9.9", device: "eth1", scope: 253 },
    ]);
    const t = await routeTable(ns);
    expect(t).toContain("v4 192.168.144.0/20 via 10.1.1.1 dev eth0 scope global metric 0");
    expect(t).toContain("v4 default via 169.254.1.1 dev eth1 scope global metric 0 onlink");
    expect(t).toContain("v4 10.9.9.9 dev eth1 scope link metric 0");
  });

  it("a second identical call changes nothing and reports the same table", async () => {
    const routes = [
      { gateway: "10.1.1.1", device: "eth0" },
      { dest: "10.1.1.0/24", gateway: "10.1.1.1", source: "10.1.1.2", device: "eth0" },
    ];
    const first = await updateRoutes(routes);
    const dump = await ns.routeDump();
    const second = await updateRoutes(routes);
    expect(await ns.routeDump()).toBe(dump);
    expect(second).toEqual(first);
  });

  it("a repeated no-change call still sees what someone else changed since (the memo is keyed by the table)", async () => {
    const routes = [
      { gateway: "10.1.1.1", device: "eth0" },
      { dest: "10.1.1.0/24", gateway: "10.1.1.1", source: "10.1.1.2", device: "eth0" },
      { dest: "198.51.100.0/24", gateway: "192.0.2.1", device: "eth1" },
    ];
    await updateRoutes(routes);
    const table = await routeTable(ns);
    const repeats = () => agent.child.stderr.split("\n").filter((l) => l.includes('"repeat":true'));
    const kept = await updateRoutes(routes); // no change: kept
    expect(repeats()).toHaveLength(0);
    expect(await updateRoutes(routes)).toEqual(kept); // its repeat, answered from the memo
    await waitFor(() => repeats().length === 1, { what: "the repeat logged" });
    // Behind the agent's back: a stray route in, a requested one out.
    await ns.ip("route", "add", "203.0.113.0/24", "dev", "eth1");
    await ns.ip("route", "del", "198.51.100.0/24", "via", "192.0.2.1", "dev", "eth1");
    const after = await updateRoutes(routes);
    expect(await routeTable(ns)).toEqual(table);
    expect(after.Routes.map((r) => r.dest)).toContain("198.51.100.0/24");
    expect(after.Routes.map((r) => r.dest)).not.toContain("203.0.113.0/24");
    // And once more, the same table again: the same answer as at first.
    expect(await updateRoutes(routes)).toEqual(kept);
    // The call after the stray route planned afresh: no second repeat.
    expect(repeats()).toHaveLength(1);
  });

  it("rolls back when the 5th of 10 operations fails: the table is byte-identical", async () => {
    await updateRoutes([{ dest: "198.51.100.0/24", gateway: "10.1.1.1", device: "eth0" }]);
    const before = await ns.routeDump();
    const routes: RouteInit[] = [
      { dest: "10.20.1.0/24", device: "eth0" },
      { dest: "10.20.2.0/24", device: "eth0" },
      { dest: "10.20.3.0/24", device: "eth1" },
      { dest: "10.20.4.0/24", device: "eth1" },
      { dest: "10.0.0.0/8", gateway: "192.0.2.9", device: "eth0" }, // not reachable on eth0
      { dest: "10.30.1.0/24", gateway: "10.1.1.1", device: "eth0" },
      { dest: "10.30.2.0/24", gateway: "10.1.1.1", device: "eth0" },
      { dest: "10.30.3.0/24", gateway: "192.0.2.1", device: "eth1" },
      { dest: "10.30.4.0/24", gateway: "192.0.2.1", device: "eth1" },
      { dest: "10.30.5.0/24", gateway: "192.0.2.1", device: "eth1" },
    ];
    await expectError(
      updateRoutes(routes),
      Code.INVALID_ARGUMENT,
      "route 10.0.0.0/8 via 192.0.2.9 dev eth0: Nexthop has invalid gateway",
    );
    expect(await ns.routeDump()).toBe(before);
    // The agent is fine afterwards: the next call works.
    await updateRoutes([{ dest: "10.20.1.0/24", device: "eth0" }]);
    expect(await routeTable(ns)).toContain("v4 10.20.1.0/24 dev eth0 scope global metric 0");
  });
});

describe("UpdateRoutes: refusals, concurrent calls, 1,000 routes", () => {
  it("refuses every invalid field with INVALID_ARGUMENT naming it, and changes nothing", async () => {
    await updateRoutes([{ dest: "198.51.100.0/24", gateway: "10.1.1.1", device: "eth0" }]);
    const before = await ns.routeDump();
    const good = { dest: "203.0.113.0/24", gateway: "10.1.1.1", device: "eth0" };
    const cases: [RouteInit, string][] = [
      [{ ...good, dest: "10.0.0.1/33" }, "routes[1].dest"],
      [{ ...good, dest: "1.2.3/24" }, "routes[1].dest"],
      [{ ...good, gateway: "::ffff:1.2.3.4" }, "routes[1].gateway"],
      [{ ...good, gateway: "fd00:1::1" }, "routes[1].gateway"],
      [{ ...good, device: "eth0\nlink set lo down" }, "routes[1].device"],
      [{ ...good, device: "-force" }, "routes[1].device"],
      [{ ...good, device: "averyveryverylongname" }, "routes[1].device"],
      [{ ...good, device: "" }, "routes[1].device"],
      [{ ...good, device: "lo" }, "routes[1].device"],
      [{ ...good, source: "10.1.1.0/24" }, "routes[1].source"],
      [{ ...good, scope: 300 }, "routes[1].scope"],
      [{ ...good, flags: 2 }, "routes[1].flags"],
      [{ ...good, mtu: 20 }, "routes[1].mtu"],
      [{ ...good, family: 7 as IPFamily }, "routes[1].family"],
      [{ ...good, family: IPFamily.v6 }, "routes[1].family"],
    ];
    for (const [route, field] of cases) {
      await expectError(
        updateRoutes([{ dest: "10.20.1.0/24", device: "eth0" }, route]),
        Code.INVALID_ARGUMENT,
        field,
      );
    }
    // 1,200 routes: validated while the table is read (validate-while-reading.ts).
    const many = Array.from({ length: 1200 }, (_, i) => ({
      dest: `10.30.${i >> 8}.${i & 255}/32`,
      device: "eth0",
    }));
    await expectError(
      updateRoutes([...many, { ...good, dest: "10.0.0.1/33" }]),
      Code.INVALID_ARGUMENT,
      "routes[1200].dest",
    );
    await expectError(
      client.unary(AgentService.method.updateRoutes, {} as UpdateRoutesRequest),
      Code.INVALID_ARGUMENT,
      "routes: missing",
    );
    await expectError(
      updateRoutes([{ dest: "10.20.1.0/24", device: "eth9" }]),
      Code.NOT_FOUND,
      "Link not found",
    );
    expect(await ns.routeDump()).toBe(before);
  });

  it("serialises concurrent calls: 8 at once end with exactly one of the 8 tables", async () => {
    const tables = Array.from({ length: 8 }, (_, i) => [
      { dest: `10.${50 + i}.0.0/16`, gateway: "10.1.1.1", device: "eth0" },
      { dest: `172.16.${i}.0/24`, gateway: "192.0.2.1", device: "eth1" },
    ]);
    const replies = await Promise.all(tables.map((t) => updateRoutes(t)));
    expect(replies).toHaveLength(8);
    const final = (await routeTable(ns)).filter((l) => l.includes(" via "));
    const matches = tables.filter((t) => {
      const want = t
        .map((r) => `v4 ${r.dest} via ${r.gateway} dev ${r.device} scope global metric 0`)
        .sort();
      return JSON.stringify(want) === JSON.stringify(final);
    });
    expect(matches).toHaveLength(1);
  });

  it("applies 1,000 routes in one call and reads them back", async () => {
    const routes = Array.from({ length: 1000 }, (_, i) => ({
      dest: `10.${100 + (i >> 8)}.${i & 255}.0/24`,
      gateway: "10.1.1.1",
      device: "eth0",
    }));
    const reply = await updateRoutes(routes);
    expect(reply.Routes.filter((r) => r.gateway === "10.1.1.1")).toHaveLength(1000);
    expect((await routeTable(ns)).filter((l) => l.includes("via 10.1.1.1"))).toHaveLength(1000);
  });
});

function fe80(lines: string[]): string[] {
  return lines
    .filter((l) => l.startsWith("v6 fe80::/64"))
    .map((l) => `fe80::/64 ${/dev (\S+)/.exec(l)?.[1]}`);
}
