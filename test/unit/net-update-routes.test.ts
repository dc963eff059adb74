/**
 * UpdateRoutes and ListRoutes through the real handler, validation, planner
 * and renderer, with the kernel played by test/support/route-sim.ts behind
 * a stand-in IpRunner that runs the rendered `ip -batch` lines. Pure: no
 * root, no netns, no spawn.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createNetworkService } from "../../src/agent/services/kata-network-service";
import { createLogger } from "../../src/common/log";
import { UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { IPFamily, type RouteSchema } from "../../src/gen/types_pb";
import type { IpRunner } from "../../src/net/iproute/ip-runner";
import { type Link, type NetState, type Route, routeIdentity } from "../../src/net/model/model";
import { classifyIpError, ipErrorText } from "../../src/net/parse/ip-errors";
import { IpBatchError } from "../../src/net/parse/ip-results";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { CallContext } from "../../src/ttrpc/service";
import { narrowReads } from "../helpers/fake-ip-reads";
import { RouteSim, SimError } from "../support/route-sim";

type RouteInit = MessageInitShape<typeof RouteSchema>;

/** IpRunner's public surface over the model; `failAt` makes batch line i fail like iproute2. */
class SimIp {
  readonly sim: RouteSim;
  readonly batches: { lines: string[]; force: boolean }[] = [];
  failAt = new Set<number>();

  constructor(
    readonly links: Link[],
    routes?: Route[],
  ) {
    this.sim = new RouteSim(routes ?? impliedKernelRoutes(links));
  }

  async readState(): Promise<NetState> {
    return { links: this.links, routes: this.sim.routes.map((r) => ({ ...r })), neighbors: [] };
  }

  readonly narrow = narrowReads(() => this.readState());
  readLinks = () => this.narrow.readLinks();
  readLinksAndRoutes = () => this.narrow.readLinksAndRoutes();
  readLinksAndNeighbors = () => this.narrow.readLinksAndNeighbors();

  async readRoutes(): Promise<Route[]> {
    return this.sim.routes.map((r) => ({ ...r }));
  }

  /** The change and its read-back (one process in IpRunner). */
  async batchThenRoutes(lines: readonly string[]): Promise<Route[]> {
    await this.batch(lines);
    return this.readRoutes();
  }

  async batch(lines: readonly string[], options: { force?: boolean } = {}): Promise<void> {
    if (lines.length === 0) return;
    const force = options.force === true;
    this.batches.push({ lines: [...lines], force });
    let stderr = "";
    for (const [i, line] of lines.entries()) {
      try {
        if (!force && this.failAt.has(i)) {
          throw new SimError("injected", "RTNETLINK answers: Network is unreachable");
        }
        this.sim.applyLine(line);
      } catch (err) {
        if (!(err instanceof SimError)) throw err;
        stderr += `${err.stderr || err.message}\nCommand failed -:${i + 1}\n`;
        if (!force) break;
      }
    }
    if (!stderr) return;
    const first = Number(/-:(\d+)/.exec(stderr)?.[1]) - 1;
    throw new IpBatchError(first, lines[first], ipErrorText(stderr), classifyIpError(stderr));
  }
}

const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];
const eth = (index: number, name: string, addresses: Link["addresses"]): Link => ({
  index,
  name,
  mac: `02:00:00:00:00:0${index}`,
  mtu: 1500,
  flags: UP,
  kind: "veth",
  addresses,
});
const v4 = (address: string, prefix: number) => ({
  family: 4 as const,
  address,
  prefix,
  scope: "global",
});
const v6 = (address: string, prefix: number, scope = "global") => ({
  family: 6 as const,
  address,
  prefix,
  scope,
});

const ctx: CallContext = {
  signal: new AbortController().signal,
  deadline: undefined,
  metadata: new Map(),
};

function service(ip: SimIp) {
  const svc = createNetworkService({
    ip: ip as unknown as IpRunner,
    log: createLogger("error", () => {}),
    hotplugTimeoutMs: 100,
  });
  const update = async (routes: RouteInit[]) => {
    const fn = svc.updateRoutes;
    if (!fn) throw new Error("no updateRoutes");
    return fn(create(UpdateRoutesRequestSchema, { routes: { Routes: routes } }), ctx);
  };
  return { svc, update };
}

async function rejection(p: Promise<unknown>): Promise<TtrpcError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(TtrpcError);
    return err as TtrpcError;
  }
  throw new Error("expected a rejection");
}

const table = (routes: readonly Route[]) =>
  routes.map((r) => routeIdentity(r, true)).sort((a, b) => a.localeCompare(b));

/** A CNI ptp pod's NIC: eth0 10.248.246.146/28, dual stack. */
const ptpLinks = () => [
  eth(2, "eth0", [v4("10.248.246.146", 28), v6("2001:db8:1::146", 64), v6("fe80::2", 64, "link")]),
];
const PTP: RouteInit[] = [
  { dest: "", gateway: "10.248.246.145", device: "eth0" },
  {
    dest: "10.248.246.144/28",
    gateway: "10.248.246.145",
    device: "eth0",
    source: "10.248.246.146",
  },
  { dest: "10.248.246.145", device: "eth0", source: "10.248.246.146", scope: 253 },
  { dest: "", gateway: "fe80::1", device: "eth0", family: IPFamily.v6 },
  { dest: "2001:db8:1::/64", gateway: "fe80::1", device: "eth0", family: IPFamily.v6 },
];

describe("UpdateRoutes over the kernel model", () => {
  it("ends with exactly the PTP pod's table, both families, and answers it read back", async () => {
    const ip = new SimIp(ptpLinks());
    const { update } = service(ip);
    const reply = await update(PTP);
    expect(reply.Routes?.map((r) => [r.dest, r.gateway, r.device, r.source, r.scope])).toEqual(
      ip.sim.routes.map((r) => [r.dst, r.gateway ?? "", r.dev, r.prefsrc ?? "", r.scope]),
    );
    expect(
      ip.sim.routes.map((r) => `${r.dst} ${r.gateway ?? "-"} ${r.dev} ${r.protocol}`).sort(),
    ).toEqual(
      [
        "0.0.0.0/0 10.248.246.145 eth0 boot",
        "10.248.246.144/28 10.248.246.145 eth0 boot",
        "10.248.246.145/32 - eth0 boot",
        "::/0 fe80::1 eth0 boot",
        "2001:db8:1::/64 fe80::1 eth0 boot",
        "fe80::/64 - eth0 kernel",
      ].sort(),
    );
  });

  it("changes nothing when called again with the same table", async () => {
    const ip = new SimIp(ptpLinks());
    const { update } = service(ip);
    await update(PTP);
    const before = table(ip.sim.routes);
    const batches = ip.batches.length;
    await update(PTP);
    expect(ip.batches.length).toBe(batches);
    expect(table(ip.sim.routes)).toEqual(before);
  });

  it("removes stale routes and brings back the kernel routes no request supersedes", async () => {
    const ip = new SimIp(ptpLinks());
    const { update } = service(ip);
    await update(PTP);
    await update([{ dest: "", gateway: "10.248.246.145", device: "eth0", flags: 4 }]);
    expect(ip.sim.routes.map((r) => `${r.dst} ${r.gateway ?? "-"} ${r.protocol}`).sort()).toEqual(
      [
        "0.0.0.0/0 10.248.246.145 boot",
        "10.248.246.144/28 - kernel",
        "2001:db8:1::/64 - kernel",
        "fe80::/64 - kernel",
      ].sort(),
    );
  });

  it("restores the table when the 5th of 10 operations fails, and names that route", async () => {
    const links = [eth(2, "eth0", [v4("10.0.0.2", 24)])];
    const ip = new SimIp(links);
    const { update } = service(ip);
    const routes: RouteInit[] = Array.from({ length: 10 }, (_, i) => ({
      dest: `10.${i + 10}.0.0/16`,
      gateway: "10.0.0.1",
      device: "eth0",
    }));
    await update(routes.slice(0, 3));
    const before = table(ip.sim.routes);
    ip.failAt = new Set([4]);
    const err = await rejection(update(routes));
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toMatch(
      /^route 10\.\d+\.0\.0\/16 via 10\.0\.0\.1 dev eth0: Network is unreachable$/,
    );
    expect(table(ip.sim.routes)).toEqual(before);
    expect(ip.batches.at(-1)?.force).toBe(true);
  });
});

describe("UpdateRoutes over the kernel model: refusals, two links, concurrent calls", () => {
  it("answers an unreachable gateway INVALID_ARGUMENT naming the route and ip's reason, and changes nothing", async () => {
    const ip = new SimIp([eth(2, "eth0", [v4("10.0.0.2", 24)])]);
    const { update } = service(ip);
    const before = table(ip.sim.routes);
    const err = await rejection(
      update([
        { dest: "10.1.0.0/16", gateway: "10.0.0.1", device: "eth0" },
        { dest: "10.0.0.0/8", gateway: "192.0.2.9", device: "eth0" },
      ]),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toBe(
      "route 10.0.0.0/8 via 192.0.2.9 dev eth0: Nexthop has invalid gateway",
    );
    expect(table(ip.sim.routes)).toEqual(before);
  });

  it("is NOT_FOUND 'Link not found' for an unknown device, before any change", async () => {
    const ip = new SimIp([eth(2, "eth0", [v4("10.0.0.2", 24)])]);
    const { update } = service(ip);
    const err = await rejection(
      update([
        { dest: "10.1.0.0/16", device: "eth0" },
        { dest: "10.2.0.0/16", device: "eth7" },
      ]),
    );
    expect(err.code).toBe(Code.NOT_FOUND);
    expect(err.message).toBe("Link not found (routes[1].device eth7)");
    expect(ip.batches).toEqual([]);
  });

  it("is INVALID_ARGUMENT for a bad field, before any read or change", async () => {
    const ip = new SimIp([eth(2, "eth0", [v4("10.0.0.2", 24)])]);
    const { update } = service(ip);
    const err = await rejection(update([{ dest: "10.0.0.1/33", device: "eth0" }]));
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toContain('routes[0].dest: "10.0.0.1/33"');
    expect(ip.batches).toEqual([]);
  });

  it("is INVALID_ARGUMENT for a bad field of a large request (checked beside the read), changing nothing", async () => {
    const ip = new SimIp([eth(2, "eth0", [v4("10.0.0.2", 24)])]);
    const { update } = service(ip);
    const before = table(ip.sim.routes);
    const routes = Array.from({ length: 1500 }, (_, i) => ({
      dest: `10.${1 + (i >> 8)}.${i & 255}.0/24`,
      gateway: "10.0.0.1",
      device: "eth0",
    }));
    routes[1234] = { dest: "10.99.0.1/33", gateway: "10.0.0.1", device: "eth0" };
    const err = await rejection(update(routes));
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toContain('routes[1234].dest: "10.99.0.1/33"');
    expect(ip.batches).toEqual([]);
    expect(table(ip.sim.routes)).toEqual(before);
  });

  it("same subnet on two links: the request on eth1 supersedes eth1's kernel route, eth0 keeps its own", async () => {
    const ip = new SimIp([
      eth(2, "eth0", [v4("10.0.0.2", 24)]),
      eth(3, "eth1", [v4("10.0.0.3", 24)]),
    ]);
    const { update } = service(ip);
    await update([
      { dest: "10.0.0.1/32", device: "eth1", scope: 253 },
      { dest: "10.0.0.0/24", gateway: "10.0.0.1", device: "eth1" },
    ]);
    expect(ip.sim.routes.map((r) => `${r.dst} ${r.gateway ?? "-"} ${r.dev}`).sort()).toEqual([
      "10.0.0.0/24 - eth0",
      "10.0.0.0/24 10.0.0.1 eth1",
      "10.0.0.1/32 - eth1",
    ]);
    // And back: both kernel routes return, each on its link.
    await update([]);
    expect(ip.sim.routes.map((r) => `${r.dst} ${r.dev} ${r.protocol}`).sort()).toEqual([
      "10.0.0.0/24 eth0 kernel",
      "10.0.0.0/24 eth1 kernel",
    ]);
  });

  it("serialises concurrent calls: 8 at once end with exactly one requested table", async () => {
    const ip = new SimIp([eth(2, "eth0", [v4("10.0.0.2", 24)])]);
    const { update } = service(ip);
    const tables = Array.from({ length: 8 }, (_, i) => [
      { dest: "", gateway: "10.0.0.1", device: "eth0" },
      { dest: `10.${i + 1}.0.0/16`, gateway: "10.0.0.1", device: "eth0" },
    ]);
    await Promise.all(tables.map((t) => update(t)));
    const dsts = ip.sim.routes.map((r) => r.dst).sort();
    expect(dsts).toEqual(["0.0.0.0/0", "10.0.0.0/24", "10.8.0.0/16"]);
  });
});
