/**
 * The policy's schema (a bad policy names its field) and the pure checker
 * (src/agent/policy/check.ts): each rule refuses what it should and admits
 * the pod's own set-up, table-driven on the ptp pod of the demo.
 */
import { describe, expect, it } from "vitest";
import {
  askApply,
  askDryRun,
  askInterface,
  askNeighbours,
  askRead,
  askRoutes,
} from "../../src/agent/policy/ask";
import { checkRequest, compilePolicy } from "../../src/agent/policy/check";
import { POLICY_REFUSAL, refusalMessage } from "../../src/agent/policy/gate";
import { type Policy, PolicyError, parsePolicy } from "../../src/agent/policy/schema";
import type { DesiredState } from "../../src/net/model/full-state";
import type { Route } from "../../src/net/model/model";
import { DEFAULT_RULES } from "../../src/net/plan/rules";

const MAC = "f2:c6:1b:4a:33:10";
const POLICY: Policy = parsePolicy(
  JSON.stringify({
    netagentPolicy: 1,
    interfaces: {
      macs: [MAC],
      names: ["eth0"],
      max: 1,
      mtu: { min: 1500, max: 1500 },
      flags: ["down"],
    },
    addresses: {
      ipv4: { exact: ["10.248.246.146/28"] },
      ipv6: { within: ["fe80::/64"] },
      perInterface: 2,
    },
    routes: {
      destinations: { exact: ["0.0.0.0/0", "10.248.246.144/28", "10.248.246.145/32", "fe80::/64"] },
      gateways: ["10.248.246.145/32"],
      scopes: ["universe", "link"],
    },
    neighbours: { ips: ["10.248.246.145/32"], lladdrs: ["02:00:00:00:00:01"] },
    sysctls: { "net.ipv4.conf.eth0.rp_filter": ["1"], "net.ipv4.conf.*.accept_local": "any" },
    reads: true,
  }),
  "test",
);
const c = compilePolicy(POLICY);

const route = (dst: string, extra: Partial<Route> = {}): Route => ({
  family: dst.includes(":") ? 6 : 4,
  dst,
  dev: "eth0",
  scope: 0,
  metric: 0,
  onlink: false,
  mtu: 0,
  protocol: "boot",
  type: "unicast",
  ...extra,
});
const POD_ROUTES: Route[] = [
  route("0.0.0.0/0", { gateway: "10.248.246.145" }),
  route("10.248.246.144/28", { gateway: "10.248.246.145", prefsrc: "10.248.246.146" }),
  route("10.248.246.145/32", { scope: 253, prefsrc: "10.248.246.146" }),
];
const iface = (over: Partial<Parameters<typeof askInterface>[0]> = {}) => ({
  mac: MAC,
  name: "eth0",
  mtu: 1500,
  noarp: false,
  devicePath: "",
  addresses: [{ family: 4 as const, address: "10.248.246.146", prefix: 28 }],
  ...over,
});
const state = (over: Partial<DesiredState> = {}): DesiredState => ({
  links: [
    { mac: MAC, name: "eth0", mtu: 1500, noarp: false, up: true, addresses: iface().addresses },
  ],
  routes: POD_ROUTES,
  rules: DEFAULT_RULES.map((r) => ({ ...r })),
  neighbors: [],
  sysctls: [],
  nexthops: [],
  ...over,
});
const rule = (r: ReturnType<typeof checkRequest>) => r?.rule;

describe("policy schema", () => {
  it.each([
    ["{", /not JSON/],
    ['{"netagentPolicy": 2}', /netagentPolicy: /],
    [
      '{"netagentPolicy": 1, "routes": {"gateways": ["10.0.0.1/33"]}}',
      /routes\.gateways\.0: is not a CIDR/,
    ],
    ['{"netagentPolicy": 1, "interfaces": {"macs": ["zz"]}}', /interfaces\.macs\.0: is not a MAC/],
    [
      '{"netagentPolicy": 1, "interfaces": {"mtu": {"min": 9000, "max": 1500}}}',
      /interfaces\.mtu: min 9000 is above max 1500/,
    ],
    ['{"netagentPolicy": 1, "routs": {}}', /routs: /],
    ['{"netagentPolicy": 1, "phases": {"running": ["everything"]}}', /phases\.running\.0: /],
  ])("%s is refused naming the field", (text, message) => {
    expect(() => parsePolicy(text, "f")).toThrow(PolicyError);
    expect(() => parsePolicy(text, "f")).toThrow(message);
  });

  it("fields left out allow nothing of their kind", () => {
    const p = parsePolicy('{"netagentPolicy": 1}', "f");
    expect(p.interfaces.macs).toEqual([]);
    expect(p.rules.allowed).toBe(false);
    expect(p.reads).toBe(false);
    expect(p.packetFilter).toBe(false);
    expect(p.phases.running).toEqual([]);
  });
});

describe("policy checker", () => {
  it("admits the pod's own set-up through the Kata methods and Apply", () => {
    expect(checkRequest(c, askInterface(iface()), { links: [] }, "setup")).toBeUndefined();
    expect(checkRequest(c, askRoutes(POD_ROUTES, true), { links: [] }, "setup")).toBeUndefined();
    expect(
      checkRequest(c, askApply(state(), true, true), { links: [], rules: DEFAULT_RULES }, "setup"),
    ).toBeUndefined();
    expect(checkRequest(c, askRead("x/ListRoutes"), { links: [] }, "setup")).toBeUndefined();
  });

  it.each<[string, Parameters<typeof askInterface>[0], string]>([
    ["a MAC not listed", iface({ mac: "02:00:00:00:00:99" }), "interfaces.macs"],
    ["a name not listed", iface({ name: "evil0" }), "interfaces.names"],
    ["MTU 65535", iface({ mtu: 65535 }), "interfaces.mtu"],
    ["MTU 68", iface({ mtu: 68 }), "interfaces.mtu"],
    ["NOARP", iface({ noarp: true }), "interfaces.flags"],
    [
      "a foreign address",
      iface({ addresses: [{ family: 4, address: "192.0.2.5", prefix: 24 }] }),
      "addresses.ipv4",
    ],
    [
      "the pod's address widened",
      iface({ addresses: [{ family: 4, address: "10.248.246.146", prefix: 24 }] }),
      "addresses.ipv4",
    ],
    [
      "the pod's address swapped",
      iface({ addresses: [{ family: 4, address: "10.248.246.147", prefix: 28 }] }),
      "addresses.ipv4",
    ],
    [
      "one address too many",
      iface({
        addresses: [
          { family: 4, address: "10.248.246.146", prefix: 28 },
          { family: 6, address: "fe80::1", prefix: 64 },
          { family: 6, address: "fe80::2", prefix: 64 },
        ],
      }),
      "addresses.perInterface",
    ],
  ])("UpdateInterface: %s", (_, spec, expected) => {
    expect(rule(checkRequest(c, askInterface(spec), { links: [] }, "setup"))).toBe(expected);
  });

  it.each<[string, Route[], string]>([
    [
      "a default route through a foreign gateway",
      [route("0.0.0.0/0", { gateway: "192.0.2.1", onlink: true })],
      "routes.gateways",
    ],
    [
      "two /1 routes",
      [
        route("0.0.0.0/1", { gateway: "10.248.246.145" }),
        route("128.0.0.0/1", { gateway: "10.248.246.145" }),
      ],
      "routes.destinations",
    ],
    [
      "source 127.0.0.1",
      [route("0.0.0.0/0", { gateway: "10.248.246.145", prefsrc: "127.0.0.1" })],
      "routes.sources",
    ],
    ["a route through lo", [route("10.248.246.145/32", { dev: "lo", scope: 253 })], "routes.lo"],
    [
      "a route in table 100",
      [route("0.0.0.0/0", { gateway: "10.248.246.145", table: 100 })],
      "routes.tables",
    ],
    ["a blackhole", [route("0.0.0.0/0", { dev: "", type: "blackhole" })], "routes.types"],
    ["scope host", [route("10.248.246.145/32", { scope: 254 })], "routes.scopes"],
    [
      "a path through a foreign gateway",
      [
        route("0.0.0.0/0", {
          dev: "",
          hops: [
            { dev: "eth0", gateway: "10.248.246.145", weight: 1, onlink: false },
            { dev: "eth0", gateway: "192.0.2.1", weight: 1, onlink: true },
          ],
        }),
      ],
      "routes.gateways",
    ],
  ])("UpdateRoutes: %s", (_, routes, expected) => {
    expect(
      rule(checkRequest(c, askRoutes([...POD_ROUTES, ...routes], true), { links: [] }, "setup")),
    ).toBe(expected);
  });
});

describe("policy checker: neighbours, Apply, the count of interfaces", () => {
  it("neighbours: foreign IP, foreign lladdr, another state", () => {
    const n = (ip: string, lladdr: string, nud = "permanent") => ({
      ip,
      family: 4 as const,
      dev: "eth0",
      lladdr,
      nud,
      router: false,
      externLearned: false,
    });
    const check = (x: ReturnType<typeof n>) =>
      rule(checkRequest(c, askNeighbours([x], []), { links: [] }, "setup"));
    expect(check(n("8.8.8.8", "02:00:00:00:00:01"))).toBe("neighbours.ips");
    expect(check(n("10.248.246.145", "02:66:66:66:66:66"))).toBe("neighbours.lladdrs");
    expect(check(n("10.248.246.145", "02:00:00:00:00:01", "reachable"))).toBe("neighbours.states");
    expect(check(n("10.248.246.145", "02:00:00:00:00:01"))).toBeUndefined();
  });

  it("Apply: rules, sysctls, tun devices, extra NICs, and the kernel's rules an exact Apply would remove", () => {
    const apply = (s: DesiredState, exact = true) =>
      rule(checkRequest(c, askApply(s, exact, true), { links: [], rules: DEFAULT_RULES }, "setup"));
    const extraRule = {
      family: 4 as const,
      priority: 100,
      not: false,
      action: "lookup" as const,
      table: 254,
      fwmark: { mark: 1, mask: 0xffffffff },
    };
    expect(apply(state({ rules: [...DEFAULT_RULES, extraRule] }))).toBe("rules.allowed");
    expect(apply(state({ rules: DEFAULT_RULES.slice(1) }))).toBe("rules.allowed");
    expect(apply(state({ rules: DEFAULT_RULES.slice(1) }), false)).toBeUndefined();
    expect(apply(state({ sysctls: [{ key: "net.ipv4.ip_forward", value: "1" }] }))).toBe("sysctls");
    expect(apply(state({ sysctls: [{ key: "net.ipv4.conf.eth0.rp_filter", value: "0" }] }))).toBe(
      "sysctls",
    );
    expect(
      apply(state({ sysctls: [{ key: "net.ipv4.conf.eth0.rp_filter", value: "1" }] })),
    ).toBeUndefined();
    expect(
      apply(state({ sysctls: [{ key: "net.ipv4.conf.eth9.accept_local", value: "1" }] })),
    ).toBeUndefined();
    const links = state().links;
    expect(
      apply(
        state({
          links: [
            ...links,
            {
              mac: "",
              name: "tun9",
              mtu: 0,
              noarp: false,
              up: true,
              addresses: [],
              tuntap: { mode: "tun" } as never,
            },
          ],
        }),
      ),
    ).toBe("tuntap.names");
    expect(apply(state({ links: [{ ...links[0], up: false } as never] }))).toBeUndefined();
    expect(apply(state({ links: [{ ...links[0], attrs: [["promisc", "on"]] } as never] }))).toBe(
      "interfaces.flags",
    );
    expect(
      apply(
        state({
          links: [...links, { ...links[0], mac: "02:00:00:00:00:98", name: "eth1" } as never],
        }),
      ),
    ).toBe("interfaces.macs");
  });

  it("interfaces.max counts the guest's other configured links", () => {
    const other = {
      mac: "02:00:00:00:00:05",
      name: "eth1",
      addresses: [{ family: 4 as const, address: "192.0.2.9", prefix: 24, scope: "global" }],
    };
    const wide = compilePolicy({
      ...POLICY,
      interfaces: { ...POLICY.interfaces, macs: "any", names: "any" },
    });
    expect(rule(checkRequest(wide, askInterface(iface()), { links: [other] }, "setup"))).toBe(
      "interfaces.max",
    );
  });
});

describe("policy checker: reads, the running phase, messages", () => {
  it("reads and the packet filter need the policy's yes", () => {
    const closed = compilePolicy(parsePolicy('{"netagentPolicy": 1}', "t"));
    expect(
      rule(checkRequest(closed, askRead("grpc.AgentService/ListRoutes"), { links: [] }, "setup")),
    ).toBe("reads");
    expect(
      rule(
        checkRequest(
          closed,
          { method: "SetIPTables", packetFilter: true, changes: true },
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("packetFilter");
  });

  it("an Apply dry run is a read: refused naming dry_run without reads, admitted with them", () => {
    const closed = compilePolicy(parsePolicy('{"netagentPolicy": 1}', "t"));
    const r = checkRequest(closed, askDryRun(), { links: [] }, "setup");
    expect(r && refusalMessage(r)).toBe(
      'policy rule reads refuses dry_run "true": answers only what it reads: reads are not allowed',
    );
    expect(checkRequest(c, askDryRun(), { links: [] }, "running")).toBeUndefined();
  });

  it("running phase: a change is refused, a call that changes nothing is not", () => {
    expect(rule(checkRequest(c, askRoutes(POD_ROUTES, true), { links: [] }, "running"))).toBe(
      "phases.running",
    );
    expect(checkRequest(c, askRoutes(POD_ROUTES, false), { links: [] }, "running")).toBeUndefined();
    const neighbours = compilePolicy({
      ...POLICY,
      phases: { ...POLICY.phases, running: ["neighbours"] },
    });
    expect(
      rule(checkRequest(neighbours, askRoutes(POD_ROUTES, true), { links: [] }, "running")),
    ).toBe("phases.running");
  });

  it("the message names rule, field and value in one form a host can read back", () => {
    const r = checkRequest(
      c,
      askRoutes([route("0.0.0.0/0", { gateway: "192.0.2.1" })], true),
      { links: [] },
      "setup",
    );
    const message = refusalMessage(r as NonNullable<typeof r>);
    expect(message).toBe(
      'policy rule routes.gateways refuses routes[0].gateway "192.0.2.1": is not inside [10.248.246.145/32]',
    );
    expect(POLICY_REFUSAL.exec(message)?.[1]).toBe("routes.gateways");
  });
});

describe("the checker's scopes (before the read, after the plan)", () => {
  const bad = askRoutes([route("0.0.0.0/0", { gateway: "192.0.2.1" })], true);
  it("request: everything but the phase and the guest's state", () => {
    expect(checkRequest(c, bad, { links: [] }, "running", "request")?.rule).toBe("routes.gateways");
    expect(
      checkRequest(c, askRoutes(POD_ROUTES, true), { links: [] }, "running", "request"),
    ).toBeUndefined();
  });
  it("state: the phase, the links and the kernel's rules, not the routes again", () => {
    expect(checkRequest(c, bad, { links: [] }, "setup", "state")).toBeUndefined();
    expect(checkRequest(c, bad, { links: [] }, "running", "state")?.rule).toBe("phases.running");
    const apply = askApply(state({ rules: [] }), true, true);
    expect(
      checkRequest(c, apply, { links: [], rules: DEFAULT_RULES }, "setup", "request"),
    ).toBeUndefined();
    expect(
      checkRequest(c, apply, { links: [], rules: DEFAULT_RULES }, "setup", "state")?.rule,
    ).toBe("rules.allowed");
  });
});
