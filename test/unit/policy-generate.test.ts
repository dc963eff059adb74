/**
 * The policies netagentctl writes without a pod: from a CNI network
 * configuration list (policy-from-cni-config.ts) and from genpolicy's
 * settings (policy-from-genpolicy.ts), checked by what the agent's checker
 * then admits and refuses.
 */
import { describe, expect, it } from "vitest";
import { askInterface, askNeighbours, askRoutes } from "../../src/agent/policy/ask";
import { checkRequest, compilePolicy } from "../../src/agent/policy/check";
import { parsePolicy } from "../../src/agent/policy/schema";
import { policyForCniConfig } from "../../src/host/policy/policy-from-cni-config";
import { GenpolicyError, policyForGenpolicy } from "../../src/host/policy/policy-from-genpolicy";
import type { Route } from "../../src/net/model/model";

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
const iface = (address: string, prefix: number, mac = "0a:58:0a:f4:00:05") => ({
  mac,
  name: "eth0",
  mtu: 1500,
  noarp: false,
  devicePath: "",
  addresses: [{ family: 4 as const, address, prefix }],
});

describe("policy for every pod of a CNI network", () => {
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "pods",
    plugins: [
      {
        type: "ptp",
        mtu: 1500,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: "10.244.0.0/24" }]],
          routes: [{ dst: "0.0.0.0/0" }],
        },
      },
      { type: "portmap", capabilities: { portMappings: true } },
    ],
  });
  const policy = policyForCniConfig(conf);
  const c = compilePolicy(parsePolicy(JSON.stringify(policy), "generated"));

  it("parses as a policy and admits any pod of the range, with any MAC", () => {
    expect(
      checkRequest(c, askInterface(iface("10.244.0.7", 24)), { links: [] }, "setup"),
    ).toBeUndefined();
    const pod = [
      route("0.0.0.0/0", { gateway: "10.244.0.1" }),
      route("10.244.0.0/24", { gateway: "10.244.0.1", prefsrc: "10.244.0.7" }),
      route("10.244.0.1/32", { scope: 253, prefsrc: "10.244.0.7" }),
    ];
    expect(checkRequest(c, askRoutes(pod, true), { links: [] }, "setup")).toBeUndefined();
  });

  it("refuses what no pod of the network has", () => {
    const rule = (r: ReturnType<typeof checkRequest>) => r?.rule;
    expect(
      rule(checkRequest(c, askInterface(iface("10.245.0.7", 24)), { links: [] }, "setup")),
    ).toBe("addresses.ipv4");
    expect(
      rule(checkRequest(c, askInterface(iface("10.244.0.7", 16)), { links: [] }, "setup")),
    ).toBe("addresses.ipv4");
    expect(
      rule(
        checkRequest(
          c,
          askRoutes([route("0.0.0.0/0", { gateway: "192.0.2.1" })], true),
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("routes.gateways");
    expect(
      rule(
        checkRequest(
          c,
          askRoutes([route("0.0.0.0/1", { gateway: "10.244.0.1" })], true),
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("routes.destinations");
    expect(
      rule(
        checkRequest(
          c,
          askInterface({ ...iface("10.244.0.7", 24), mtu: 9000 }),
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("interfaces.mtu");
  });

  it("a configuration without a usable range is refused naming the field", () => {
    expect(() =>
      policyForCniConfig('{"plugins": [{"type": "ptp", "ipam": {"ranges": [[{"subnet": "x"}]]}}]}'),
    ).toThrow(/plugins\[0\]\.ipam\.ranges\[0\]\[0\]\.subnet/);
  });
});

// The network part of request_defaults as Kata's genpolicy-settings.json ships it (4.1).
const settings = {
  request_defaults: {
    UpdateInterfaceRequest: {
      allow_raw_flags: 128,
      forbidden_names: ["lo"],
      forbidden_hw_addrs: ["00:00:00:00:00:00"],
    },
    UpdateRoutesRequest: {
      forbidden_device_names: ["lo"],
      forbidden_source_regex: [
        "^(?:0{0,4}:){0,7}0{0,3}1$",
        "^127\\.(?:[0-9]{1,3}\\.){2}[0-9]{1,3}$",
      ],
    },
    AddARPNeighborsRequest: {
      forbidden_device_names: ["lo"],
      forbidden_cidrs_regex: ["^127\\.(?:[0-9]{1,3}\\.){2}[0-9]{1,3}$"],
      allowed_states: [2, 128],
    },
  },
};
const c = compilePolicy(
  parsePolicy(JSON.stringify(policyForGenpolicy(JSON.stringify(settings))), "g"),
);
const rule = (r: ReturnType<typeof checkRequest>) => r?.rule;
const n = (ip: string, nud: string, router = false, externLearned = false) => [
  {
    ip,
    family: 4 as const,
    dev: "eth0",
    lladdr: "02:00:00:00:00:01",
    nud,
    router,
    externLearned,
  },
];

describe("policy from genpolicy's settings", () => {
  it("refuses what genpolicy refuses", () => {
    expect(
      rule(
        checkRequest(
          c,
          askRoutes([route("0.0.0.0/0", { gateway: "10.0.0.1", prefsrc: "127.0.0.1" })], true),
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("routes.sources");
    expect(
      rule(
        checkRequest(
          c,
          askRoutes([route("10.0.0.0/8", { dev: "lo" })], true),
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("routes.lo");
    expect(
      rule(checkRequest(c, askNeighbours(n("127.0.0.2", "permanent"), []), { links: [] }, "setup")),
    ).toBe("neighbours.ips");
    expect(
      rule(checkRequest(c, askNeighbours(n("10.0.0.9", "stale"), []), { links: [] }, "setup")),
    ).toBe("neighbours.states");
    expect(
      rule(
        checkRequest(
          c,
          askNeighbours(n("10.0.0.9", "permanent", false, true), []),
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("neighbours.flags");
    expect(
      rule(
        checkRequest(
          c,
          { method: "SetIPTables", packetFilter: true, changes: true },
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("packetFilter");
    expect(
      rule(
        checkRequest(
          c,
          { method: "ListRoutes", read: true, changes: false },
          { links: [] },
          "setup",
        ),
      ),
    ).toBe("reads");
  });

  it("admits what genpolicy admits", () => {
    expect(
      checkRequest(
        c,
        askInterface({ ...iface("192.0.2.9", 24), noarp: true, mtu: 9000 }),
        { links: [] },
        "setup",
      ),
    ).toBeUndefined();
    expect(
      checkRequest(
        c,
        askRoutes([route("0.0.0.0/0", { gateway: "192.0.2.1", onlink: true })], true),
        { links: [] },
        "running",
      ),
    ).toBeUndefined();
    expect(
      checkRequest(c, askNeighbours(n("10.0.0.9", "reachable", true), []), { links: [] }, "setup"),
    ).toBeUndefined();
  });

  it("a deny list netagent cannot say is refused naming the field", () => {
    const more = structuredClone(settings);
    more.request_defaults.UpdateInterfaceRequest.forbidden_names.push("eth9");
    expect(() => policyForGenpolicy(JSON.stringify(more))).toThrow(GenpolicyError);
    expect(() => policyForGenpolicy(JSON.stringify(more))).toThrow(
      /UpdateInterfaceRequest\.forbidden_names: \["eth9"\]/,
    );
  });
});
