/**
 * One spelling per thing: the same route, rule, neighbour, link and address
 * read the same in every printer of netagentctl (diff of the Kata lists,
 * diff of the netagent.v1 states, the plan, the route table, the watch's
 * change lists), whichever message carried it.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  RouteType,
  RuleAction,
  type State,
  RouteSchema as StateRouteSchema,
  StateSchema,
} from "../../../src/gen/network_pb";
import {
  ARPNeighborSchema,
  InterfaceSchema,
  IPFamily,
  RouteSchema as KataRouteSchema,
} from "../../../src/gen/types_pb";
import { compareNetworks } from "../../../src/host/compare/kata-diff";
import { compareStates } from "../../../src/host/compare/state-diff";
import type { SyncRequests } from "../../../src/host/pod/pod-requests";
import { describePlanLine } from "../../../src/host/print/plan-words";
import { routesTable } from "../../../src/host/print/table";
import { diffRequests } from "../../../src/host/watch/watch-report";

const MAC = "02:00:00:00:00:01";
type KataInit = MessageInitShape<typeof KataRouteSchema>;
type StateInit = MessageInitShape<typeof StateRouteSchema>;

/** The words of one Kata route as each Kata printer says it. */
function kataWords(r: KataInit): { diff: string; watch: string } {
  const route = create(KataRouteSchema, { device: "eth0", ...r });
  const c = compareNetworks({ interfaces: [], routes: [route] }, { interfaces: [], routes: [] });
  const requests: SyncRequests = { interfaces: [], routes: [route], neighbors: [], skipped: [] };
  return {
    diff: c.routes[0]?.pod as string,
    watch: diffRequests(undefined, requests).routesAdded[0] as string,
  };
}

const emptyState = (over: MessageInitShape<typeof StateSchema>): State => create(StateSchema, over);

/** The row texts of one section of a state diff with the pod holding `pod`. */
function stateRows(pod: State, title: string): string[] {
  const c = compareStates(
    pod,
    emptyState({}),
    () => undefined,
    () => false,
  );
  return (c.sections.find((s) => s.title === title)?.rows ?? []).map((r) => r.pod);
}

function stateRoute(r: StateInit): string {
  const route = create(StateRouteSchema, { table: 254, device: "eth0", ...r });
  return stateRows(emptyState({ routes: [route] }), "routes, table main")[0] as string;
}

/** The route cell of a `list-routes` table: the destination and the rest, spaces squeezed. */
const tableRow = (r: KataInit) =>
  (routesTable([create(KataRouteSchema, { device: "eth0", ...r })]).split("\n")[1] as string)
    .split(/ {2,}/)
    .join(" | ");

describe("a route reads the same everywhere", () => {
  it("the IPv6 default: `default (v6)` in a line, `default` under FAMILY v6 in the table", () => {
    const line = "default (v6) via fe80::1 dev eth0";
    expect(kataWords({ dest: "", gateway: "fe80::1", family: IPFamily.v6 })).toEqual({
      diff: line,
      watch: line,
    });
    expect(kataWords({ dest: "::/0", gateway: "fe80::1", family: IPFamily.v6 }).diff).toBe(line);
    expect(stateRoute({ family: 6, dest: "::/0", gateway: "fe80::1" })).toBe(line);
    expect(
      describePlanLine("route replace ::/0 via fe80::1 dev eth0 scope 0 metric 0 table main").text,
    ).toBe(`add or replace ${line}`);
    expect(tableRow({ dest: "::/0", gateway: "fe80::1", family: IPFamily.v6 })).toBe(
      "v6 | default | fe80::1 | eth0",
    );
  });

  it("the IPv4 default is `default`", () => {
    const line = "default via 10.0.0.1 dev eth0";
    expect(kataWords({ dest: "", gateway: "10.0.0.1" })).toEqual({ diff: line, watch: line });
    expect(kataWords({ dest: "0.0.0.0/0", gateway: "10.0.0.1" }).diff).toBe(line);
    expect(stateRoute({ family: 4, dest: "0.0.0.0/0", gateway: "10.0.0.1" })).toBe(line);
    expect(
      describePlanLine("route replace 0.0.0.0/0 via 10.0.0.1 dev eth0 scope 0 metric 0 table main")
        .text,
    ).toBe(`add or replace ${line}`);
    expect(tableRow({ dest: "0.0.0.0/0", gateway: "10.0.0.1" })).toBe(
      "v4 | default | 10.0.0.1 | eth0",
    );
  });

  it("scopes by name: link, site, nowhere (the watch said 253, the plan 200 and 255)", () => {
    for (const [scope, name] of [
      [253, "link"],
      [200, "site"],
      [255, "nowhere"],
      [254, "host"],
    ] as const) {
      const line = `10.0.0.1/32 dev eth0 src 10.0.0.2 scope ${name}`;
      const kata = { dest: "10.0.0.1/32", source: "10.0.0.2", scope };
      expect(kataWords(kata)).toEqual({ diff: line, watch: line });
      expect(stateRoute({ family: 4, dest: "10.0.0.1/32", source: "10.0.0.2", scope })).toBe(line);
      expect(
        describePlanLine(
          `route replace 10.0.0.1/32 dev eth0 src 10.0.0.2 scope ${scope} metric 0 table main`,
        ).text,
      ).toBe(`add or replace ${line}`);
      expect(tableRow(kata)).toBe(`v4 | 10.0.0.1/32 | eth0 | 10.0.0.2 | ${name}`);
    }
  });

  it("onlink and mtu in one order, the watch included (it left them out)", () => {
    const line = "10.9.0.0/16 via 169.254.1.1 dev eth0 onlink mtu 1400";
    const kata = { dest: "10.9.0.0/16", gateway: "169.254.1.1", flags: 4, mtu: 1400 };
    expect(kataWords(kata)).toEqual({ diff: line, watch: line });
    expect(
      stateRoute({
        family: 4,
        dest: "10.9.0.0/16",
        gateway: "169.254.1.1",
        onlink: true,
        mtu: 1400,
      }),
    ).toBe(line);
    expect(
      describePlanLine(
        "route replace 10.9.0.0/16 via 169.254.1.1 dev eth0 scope 0 metric 0 onlink mtu 1400 table main",
      ).text,
    ).toBe(`add or replace ${line}`);
  });

  it("type, metric and protocol where the message has them, proto last", () => {
    const line = "unreachable 203.0.113.0/24 metric 5 proto static";
    expect(
      stateRoute({
        family: 4,
        dest: "203.0.113.0/24",
        device: "",
        type: RouteType.UNREACHABLE,
        metric: 5,
        protocol: "static",
      }),
    ).toBe(line);
    expect(
      describePlanLine(
        "route replace unreachable 203.0.113.0/24 scope 0 metric 5 proto static table main",
      ).text,
    ).toBe(`add or replace ${line}`);
  });

  it("a multipath route's paths are shown as paths, each with its gateway and device", () => {
    expect(
      describePlanLine(
        "route replace 2001:db8:2::/48 scope 0 metric 1024 table 100 nexthop via fe80::9 dev eth0 weight 1 nexthop via fd00:5::1 dev eth1 weight 2 onlink",
      ),
    ).toEqual({
      group: "routes, table 100",
      text: "add or replace 2001:db8:2::/48 metric 1024 nexthop via fe80::9 dev eth0 weight 1 nexthop via fd00:5::1 dev eth1 weight 2 onlink",
    });
  });

  it("a word the plan does not know is kept, in order, at the end", () => {
    expect(
      describePlanLine("route replace 10.0.0.0/24 dev eth0 scope 0 metric 0 pref high table 7"),
    ).toEqual({ group: "routes, table 7", text: "add or replace 10.0.0.0/24 dev eth0 pref high" });
  });
});

describe("a plan's protocols", () => {
  it("a plan's protocol numbers are shown by the names ip prints for them", () => {
    expect(
      describePlanLine("route replace 10.0.0.0/8 dev eth0 scope 253 metric 0 proto 4 table main")
        .text,
    ).toBe("add or replace 10.0.0.0/8 dev eth0 scope link proto static");
    expect(
      describePlanLine("route del 10.0.0.0/8 dev eth0 scope 253 metric 0 proto 2 table main").text,
    ).toBe("remove 10.0.0.0/8 dev eth0 scope link proto kernel  (the kernel's prefix route)");
    expect(describePlanLine("route replace 10.0.0.0/8 dev eth0 proto 200").text).toBe(
      "add or replace 10.0.0.0/8 dev eth0 proto 200",
    );
    expect(describePlanLine("rule add priority 5 protocol 99 lookup 100").text).toBe(
      "add rule 5: from all lookup 100 protocol openr",
    );
  });
});

describe("rules, neighbours, links and addresses read the same everywhere", () => {
  it("a rule: `(v6)` whenever it is IPv6, `not` before `from`", () => {
    const v6 = "100: (v6) from 2001:db8::/64 lookup 100";
    const rule = (over: object) =>
      stateRows(
        emptyState({ rules: [{ priority: 100, action: RuleAction.LOOKUP, table: 100, ...over }] }),
        "rules",
      )[0];
    expect(rule({ family: 6, from: "2001:db8::/64" })).toBe(v6);
    expect(describePlanLine("rule add priority 100 from 2001:db8::/64 lookup 100").text).toBe(
      `add rule ${v6}`,
    );
    const not = "200: not from all to 10.0.0.0/8 fwmark 0x10/0xff unreachable";
    expect(
      rule({
        priority: 200,
        family: 4,
        not: true,
        to: "10.0.0.0/8",
        fwmark: 0x10,
        fwmask: 0xff,
        action: RuleAction.UNREACHABLE,
      }),
    ).toBe(not);
    expect(
      describePlanLine("rule del priority 200 not to 10.0.0.0/8 fwmark 0x10/0xff unreachable").text,
    ).toBe(`remove rule ${not}`);
    expect(describePlanLine("-6 rule del priority 32766 lookup main").text).toBe(
      "remove rule 32766: (v6) from all lookup main",
    );
  });

  it("a neighbour: `IP dev DEV lladdr MAC [router]` (the watch said lladdr before dev)", () => {
    const line = `10.0.0.1 dev eth0 lladdr ${MAC} router`;
    expect(
      stateRows(
        emptyState({
          neighbors: [{ address: "10.0.0.1", device: "eth0", lladdr: MAC, router: true }],
        }),
        "neighbours (permanent)",
      ),
    ).toEqual([line]);
    const requests: SyncRequests = {
      interfaces: [],
      routes: [],
      neighbors: [
        create(ARPNeighborSchema, {
          toIPAddress: { address: "10.0.0.1" },
          device: "eth0",
          lladdr: MAC,
          flags: 0x80,
        }),
      ],
      skipped: [],
    };
    expect(diffRequests(undefined, requests).neighborsAdded).toEqual([line]);
    expect(
      describePlanLine(`neigh replace 10.0.0.1 lladdr ${MAC} dev eth0 nud permanent router`).text,
    ).toBe(`set ${line} nud permanent`);
    expect(describePlanLine("neigh del 10.0.0.1 dev eth0").text).toBe("remove 10.0.0.1 dev eth0");
  });

  it("a link and its addresses: `NAME MAC mtu N [noarp]`, `ADDRESS/PREFIX`", () => {
    const kata = create(InterfaceSchema, {
      name: "eth0",
      hwAddr: MAC,
      mtu: 1500n,
      rawFlags: 0x80,
      IPAddresses: [{ address: "10.0.0.2", mask: "24" }],
    });
    const c = compareNetworks({ interfaces: [kata], routes: [] }, { interfaces: [], routes: [] });
    expect(c.interfaces.map((r) => r.pod)).toEqual([`eth0 ${MAC} mtu 1500 noarp`, "  10.0.0.2/24"]);
    const rows = stateRows(
      emptyState({
        interfaces: [
          {
            name: "eth0",
            mac: MAC,
            mtu: 1500,
            noarp: true,
            up: true,
            addresses: [{ address: "10.0.0.2", prefix: 24 }],
          },
        ],
      }),
      "interfaces",
    );
    // The state knows up or down as well; the guest has no twin here, so no address rows.
    expect(rows).toEqual([`eth0 ${MAC} mtu 1500 noarp up`]);
  });
});
