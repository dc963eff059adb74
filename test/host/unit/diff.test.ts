/** compareNetworks / renderComparison: pod requests against the agent's lists. */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type Interface,
  InterfaceSchema,
  IPFamily,
  type Route,
  RouteSchema,
} from "../../../src/gen/types_pb";
import { tentativeAddresses } from "../../../src/host/compare/complete-compare";
import type { CompleteRead } from "../../../src/host/compare/complete-read";
import { probesSection } from "../../../src/host/compare/complete-report";
import { compareNetworks, renderComparison } from "../../../src/host/compare/kata-diff";
import type { Decision } from "../../../src/net/iproute/ip-lookups";

const MAC = "62:f5:74:89:88:1f";
const LL = "fe80::60f5:74ff:fe89:881f";

const iface = (over: MessageInitShape<typeof InterfaceSchema> = {}): Interface =>
  create(InterfaceSchema, {
    name: "eth0",
    device: "eth0",
    hwAddr: MAC,
    mtu: 1500n,
    IPAddresses: [
      { address: "10.248.246.146", mask: "28" },
      { family: IPFamily.v6, address: LL, mask: "64" },
    ],
    ...over,
  });
const route = (over: MessageInitShape<typeof RouteSchema>): Route =>
  create(RouteSchema, { device: "eth0", ...over });

// What sync sends for the ptp pod (default as "", host route as /32) ...
const podRoutes = [
  route({ gateway: "10.248.246.145" }),
  route({ dest: "10.248.246.144/28", gateway: "10.248.246.145", source: "10.248.246.146" }),
  route({ dest: "10.248.246.145/32", source: "10.248.246.146", scope: 253 }),
];
// ... and what ListRoutes answers after it (default as a CIDR, kernel routes included).
const guestRoutes = [
  route({ dest: "0.0.0.0/0", gateway: "10.248.246.145" }),
  route({ dest: "10.248.246.144/28", gateway: "10.248.246.145", source: "10.248.246.146" }),
  route({ dest: "10.248.246.145/32", source: "10.248.246.146", scope: 253 }),
  route({ dest: "fe80::/64", family: IPFamily.v6 }),
  route({ dest: "fe80::/64", family: IPFamily.v6, device: "peer0" }),
];
const guestIfaces = [
  create(InterfaceSchema, { ...iface(), hwAddr: MAC.toUpperCase(), rawFlags: 0x1 | 0x10000 }),
  create(InterfaceSchema, {
    name: "peer0",
    hwAddr: "02:00:00:00:00:99",
    rawFlags: 0x1,
    IPAddresses: [{ family: IPFamily.v6, address: "fe80::99", mask: "64" }],
  }),
  create(InterfaceSchema, { name: "lo", IPAddresses: [{ address: "127.0.0.1", mask: "8" }] }),
];

describe("compareNetworks", () => {
  it("equal after a sync: kernel routes and guest-only links are not differences", () => {
    const c = compareNetworks(
      { interfaces: [iface()], routes: podRoutes },
      { interfaces: guestIfaces, routes: guestRoutes },
    );
    expect(c.equal).toBe(true);
    expect(c.routes.map((r) => r.mark)).toEqual(["=", "=", "="]);
    expect(renderComparison(c)).toMatch(/verdict: EQUAL \(1 interface, 3 routes\)\n$/);
  });

  it("equal for the Calico dual-stack shape: the guest's kernel route for a /128 is not a difference", () => {
    const v6 = IPFamily.v6;
    const calico = iface({
      IPAddresses: [
        { address: "10.65.0.11", mask: "32" },
        { family: v6, address: "fd00:10:65::11", mask: "128" },
        { family: v6, address: LL, mask: "64" },
      ],
    });
    const pod = [
      route({ dest: "169.254.1.1/32", scope: 253 }),
      route({ gateway: "169.254.1.1" }),
      route({ family: v6, gateway: "fe80::ecee:eeff:feee:eeee" }),
    ];
    const guest = [
      route({ dest: "169.254.1.1/32", scope: 253 }),
      route({ dest: "0.0.0.0/0", gateway: "169.254.1.1" }),
      route({ family: v6, dest: "::/0", gateway: "fe80::ecee:eeff:feee:eeee" }),
      route({ family: v6, dest: "fd00:10:65::11/128" }),
      route({ family: v6, dest: "fe80::/64" }),
    ];
    const c = compareNetworks(
      { interfaces: [calico], routes: pod },
      { interfaces: [create(InterfaceSchema, { ...calico, rawFlags: 0x1 })], routes: guest },
    );
    expect(renderComparison(c)).not.toContain("fd00:10:65::11/128 dev eth0");
    expect(c.equal).toBe(true);
  });

  it("marks a pod-only route <, a guest-only route >, a changed route ~", () => {
    const c = compareNetworks(
      {
        interfaces: [iface()],
        routes: [
          ...podRoutes.slice(0, 2),
          route({ dest: "192.0.2.0/24", gateway: "10.248.246.145" }),
          route({ dest: "198.51.100.0/24", gateway: "10.248.246.145" }),
        ],
      },
      {
        interfaces: guestIfaces,
        routes: [...guestRoutes, route({ dest: "198.51.100.0/24", gateway: "10.248.246.147" })],
      },
    );
    expect(c.equal).toBe(false);
    expect(c.differences).toBe(3);
    const text = renderComparison(c);
    expect(text).toMatch(/^< +192\.0\.2\.0\/24 via 10\.248\.246\.145 dev eth0 +-$/m);
    expect(text).toMatch(
      /^~ +198\.51\.100\.0\/24 via 10\.248\.246\.145 dev eth0 +198\.51\.100\.0\/24 via 10\.248\.246\.147 dev eth0$/m,
    );
    expect(text).toMatch(
      /^> +- +10\.248\.246\.145\/32 dev eth0 src 10\.248\.246\.146 scope link$/m,
    );
    expect(text).toMatch(/verdict: DIFFERENT \(3 differences;/);
  });

  it("a kernel-looking guest route the pod asked for is compared, not dropped", () => {
    const kernelLike = route({ dest: "10.248.246.144/28", source: "10.248.246.146", scope: 253 });
    const c = compareNetworks(
      { interfaces: [iface()], routes: [kernelLike] },
      { interfaces: guestIfaces, routes: [kernelLike] },
    );
    expect(c.routes).toEqual([{ mark: "=", pod: expect.any(String), guest: expect.any(String) }]);
  });

  it("interfaces: name, MTU, NOARP and addresses; guest link-local ignored; MTU 0 not compared", () => {
    const differ = compareNetworks(
      {
        interfaces: [
          iface({
            name: "eth1",
            rawFlags: 0x80,
            IPAddresses: [{ address: "10.0.0.9", mask: "24" }],
          }),
        ],
        routes: [],
      },
      { interfaces: guestIfaces, routes: [] },
    );
    expect(differ.interfaces.map((r) => r.mark)).toEqual(["~", "<", ">"]);
    expect(differ.interfaces[0]?.pod).toBe(`eth1 ${MAC} mtu 1500 noarp`);

    const noMtu = compareNetworks(
      {
        interfaces: [iface({ mtu: 0n, IPAddresses: [{ address: "10.248.246.146", mask: "28" }] })],
        routes: [],
      },
      { interfaces: guestIfaces, routes: [] },
    );
    expect(noMtu.equal).toBe(true);
  });

  it("a pod interface missing in the guest", () => {
    const c = compareNetworks(
      { interfaces: [iface({ hwAddr: "02:00:00:00:00:42" })], routes: [] },
      { interfaces: guestIfaces, routes: [] },
    );
    expect(c.interfaces.map((r) => [r.mark, r.guest])).toEqual([
      ["<", "-"],
      ["<", ""],
      ["<", ""],
    ]);
  });
});

describe("diff --probes: a tentative address is named beside the lookups that differ", () => {
  const read = (addrInfo: Record<string, unknown>[]) =>
    ({ addresses: [{ ifname: "eth0", addr_info: addrInfo }] }) as unknown as CompleteRead;
  const decision = { route: { dev: "eth0", table: "main" } } as unknown as Decision;

  it("lists each side's tentative addresses, and only those", () => {
    const guest = read([
      { family: "inet6", local: "fd00:5::a", prefixlen: 128 },
      { family: "inet6", local: "fe80::1", prefixlen: 64, tentative: true },
    ]);
    expect(tentativeAddresses(guest, "guest")).toEqual(["guest: fe80::1 on eth0"]);
    expect(tentativeAddresses(read([{ family: "inet6", local: "fe80::2" }]), "pod")).toEqual([]);
  });

  it("says so in the lookups' title when some differ, not when all agree", () => {
    const differ = probesSection({
      asked: 3,
      disagreements: [{ lookup: "route get fe80::9", pod: decision, guest: decision }],
      tentative: ["guest: fe80::1 on eth0"],
    });
    expect(differ.title).toBe(
      "route lookups (3 drawn from the pod's routes and rules; 2 agree); still tentative (duplicate address detection, about a second after its link came up, no source until then): guest: fe80::1 on eth0",
    );
    const agree = probesSection({ asked: 3, disagreements: [], tentative: [] });
    expect(agree.title).toBe("route lookups (3 drawn from the pod's routes and rules; 3 agree)");
  });
});
