/**
 * The complete comparison (src/host/compare/complete-diff.ts) on hand-made reads:
 * each kind paired by its identity, a changed attribute reported by name,
 * one-sided objects, the addresses' order, sysctls against each side's own
 * fresh values; and a property: over generated reads and one planted
 * change in an attribute (any name, any kind), the comparison says
 * nothing only when an independent check (deep equality after dropping
 * exactly what mirror-differences.ts lists) agrees.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareComplete, freshValue, sysctlName } from "../../src/host/compare/complete-diff";
import type { Json } from "../../src/host/compare/complete-read";
import { emptyRead } from "./complete-helpers";

const link = (more: Json = {}): Json => ({
  ifindex: 2,
  ifname: "eth0",
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  mtu: 1500,
  qdisc: "noqueue",
  operstate: "UP",
  txqlen: 1000,
  link_type: "ether",
  address: "02:00:00:00:00:01",
  broadcast: "ff:ff:ff:ff:ff:ff",
  ...more,
});

const route = (more: Json = {}): Json => ({
  family: "inet",
  type: "unicast",
  dst: "10.8.0.0/16",
  gateway: "10.9.0.2",
  dev: "eth0",
  table: "main",
  protocol: "boot",
  scope: "global",
  flags: [],
  ...more,
});

describe("compareComplete", () => {
  it("finds nothing in two equal reads", () => {
    const r = emptyRead({ links: [link()], routes: [route()] });
    expect(compareComplete(r, structuredClone(r))).toEqual([]);
  });

  it("names the attribute a route lost (tos) and pairs it by destination", () => {
    const pod = emptyRead({ routes: [route({ tos: "0x04" })] });
    const guest = emptyRead({ routes: [route()] });
    expect(compareComplete(pod, guest)).toEqual([
      {
        kind: "route",
        what: "route 10.8.0.0/16 tos 0x04 table main",
        field: "tos",
        pod: "0x04",
        guest: "-",
      },
    ]);
  });

  it("sees a multipath route that became a route through the link", () => {
    const hops = [
      { gateway: "10.70.119.193", dev: "eth0", weight: 1, flags: [] },
      { gateway: "10.70.119.195", dev: "eth0", weight: 2, flags: ["linkdown"] },
    ];
    const pod = emptyRead({
      routes: [route({ dst: "default", gateway: undefined, dev: undefined, nexthops: hops })],
    });
    const guest = emptyRead({
      routes: [route({ dst: "default", gateway: undefined, dev: "eth0" })],
    });
    const f = compareComplete(pod, guest);
    expect(f.map((x) => [x.field, x.pod, x.guest])).toEqual(
      [
        ["dev", "-", "eth0"],
        [
          "nexthops",
          "gateway 10.70.119.193 dev eth0 weight 1 | gateway 10.70.119.195 dev eth0 weight 2",
          "-",
        ],
      ].sort(),
    );
  });

  it("reports a locked metric the guest does not lock", () => {
    const pod = emptyRead({ routes: [route({ metrics: [{ mtu: 1400 }], locks: ["mtu"] })] });
    const guest = emptyRead({ routes: [route({ metrics: [{ mtu: 1400 }] })] });
    expect(compareComplete(pod, guest).map((x) => x.field)).toEqual(["locks"]);
  });

  it("pairs links by MAC whatever their names and index, and says a renamed one", () => {
    const pod = emptyRead({ links: [link()] });
    const guest = emptyRead({ links: [link({ ifindex: 7, ifname: "ens3" })] });
    expect(compareComplete(pod, guest)).toEqual([
      { kind: "link", what: "link eth0", field: "ifname", pod: "eth0", guest: "ens3" },
    ]);
  });

  it("says what is on one side only", () => {
    const pod = emptyRead({
      nexthops: [
        { id: 5, gateway: "10.9.0.2", dev: "eth0", scope: "link", protocol: "unspec", flags: [] },
      ],
    });
    const guest = emptyRead({
      neighbours: [{ family: "inet", dst: "10.9.0.7", dev: "eth0", proxy: null }],
    });
    const f = compareComplete(pod, guest);
    expect(f.map((x) => [x.what, x.field])).toEqual([
      ["nexthop id 5", "pod only"],
      ["neighbour proxy 10.9.0.7 dev eth0", "guest only"],
    ]);
  });

  it("sees the addresses of a link in another order", () => {
    const a = (local: string) => ({ family: "inet6", local, prefixlen: 64, scope: "global" });
    const l = (info: Json[]) => ({ ...link(), addr_info: info });
    const pod = emptyRead({ addresses: [l([a("fd00::1"), a("fd00::2")])] });
    const guest = emptyRead({ addresses: [l([a("fd00::2"), a("fd00::1")])] });
    expect(compareComplete(pod, guest)).toEqual([
      {
        kind: "address",
        what: "addresses (v6) of eth0",
        field: "order",
        pod: "fd00::1/64, fd00::2/64",
        guest: "fd00::2/64, fd00::1/64",
      },
    ]);
  });

  it("compares lifetimes as forever, finite or 0: a deprecated address is not a preferred one", () => {
    const a = (preferred: number, valid: number) => ({
      ...link(),
      addr_info: [
        {
          family: "inet6",
          local: "fd00::1",
          prefixlen: 64,
          valid_life_time: valid,
          preferred_life_time: preferred,
        },
      ],
    });
    expect(
      compareComplete(
        emptyRead({ addresses: [a(300, 600)] }),
        emptyRead({ addresses: [a(290, 590)] }),
      ),
    ).toEqual([]);
    expect(
      compareComplete(
        emptyRead({ addresses: [a(0, 600)] }),
        emptyRead({ addresses: [a(4294967295, 4294967295)] }),
      ).map((x) => [x.field, x.pod, x.guest]),
    ).toEqual([
      ["valid_lft", "finite", "forever"],
      ["preferred_lft", "0", "forever"],
    ]);
  });
});

describe("sysctls against each side's own fresh namespace", () => {
  const fresh = new Map([
    ["ipv4/conf/default/rp_filter", "0"],
    ["ipv4/neigh/lo/retrans_time_ms", "1000"],
    ["ipv4/tcp_rmem", "4096\t131072\t6291456"],
  ]);
  it("takes a link's value against its default entry (neigh: the loopback's)", () => {
    expect(freshValue("ipv4/conf/eth0/rp_filter", fresh)).toBe("0");
    expect(freshValue("ipv4/neigh/eth0/retrans_time_ms", fresh)).toBe("1000");
    expect(freshValue("ipv4/conf/eth0/nosuch", fresh)).toBeUndefined();
  });

  it("reports a value set on either side, not one at each kernel's own default", () => {
    const pod = emptyRead({
      fresh,
      sysctls: new Map([
        ["ipv4/tcp_rmem", "4096 131072 6291456"],
        ["ipv4/conf/eth0/rp_filter", "2"],
      ]),
    });
    const guestFresh = new Map([...fresh, ["ipv4/tcp_rmem", "4096 65536 1048576"]]);
    const guest = emptyRead({
      fresh: guestFresh,
      sysctls: new Map([
        ["ipv4/tcp_rmem", "4096\t65536\t1048576"],
        ["ipv4/conf/eth0/rp_filter", "0"],
      ]),
    });
    expect(compareComplete(pod, guest)).toEqual([
      {
        kind: "sysctl",
        what: "sysctl net.ipv4.conf.eth0.rp_filter",
        field: "value",
        pod: "2",
        guest: "0",
      },
    ]);
  });

  it("reports a file one kernel lacks only when the other side set it", () => {
    const pod = emptyRead({
      fresh: new Map([
        ["a/b", "1"],
        ["a/c", "1"],
      ]),
      sysctls: new Map([
        ["a/b", "1"],
        ["a/c", "5"],
      ]),
    });
    expect(compareComplete(pod, emptyRead())).toEqual([
      { kind: "sysctl", what: "sysctl net.a.c", field: "pod only", pod: "5", guest: "-" },
    ]);
  });

  it("spells a link name with dots as sysctl(8) does", () => {
    expect(sysctlName("ipv4/conf/vnic.a-b_c/rp_filter")).toBe("net.ipv4.conf.vnic/a-b_c.rp_filter");
  });
});

/** Fields the list leaves out, by kind (the oracle's own copy, written from mirror-differences.ts's words). */
const LEFT_OUT: Record<string, readonly string[]> = {
  link: [
    "ifindex",
    "link_index",
    "link_netnsid",
    "link",
    "linkinfo",
    "min_mtu",
    "max_mtu",
    "num_tx_queues",
    "num_rx_queues",
    "gso_max_size",
    "gso_max_segs",
    "tso_max_size",
    "tso_max_segs",
    "gro_max_size",
    "gso_ipv4_max_size",
    "gro_ipv4_max_size",
    "parentbus",
    "parentdev",
    "permaddr",
    "phys_port_id",
    "phys_port_name",
    "phys_switch_id",
    "qdisc",
    "operstate",
  ],
  route: ["expires"],
  nexthop: [],
  rule: [],
};

/** The oracle: deep equality of the JSON after dropping LEFT_OUT, order of entries ignored. */
function oracleEqual(kind: string, a: Json[], b: Json[]): boolean {
  const norm = (o: Json) =>
    JSON.stringify(
      Object.fromEntries(
        Object.entries(o)
          .filter(([k]) => !(LEFT_OUT[kind] ?? []).includes(k))
          .map(([k, v]) => [
            k,
            k === "flags" && Array.isArray(v)
              ? v
                  .filter(
                    (f) =>
                      !["LOWER_UP", "NO-CARRIER", "M-DOWN", "linkdown", "dead"].includes(String(f)),
                  )
                  .sort()
              : v,
          ])
          .sort(([x], [y]) => (String(x) < String(y) ? -1 : 1)),
      ),
    );
  return JSON.stringify(a.map(norm).sort()) === JSON.stringify(b.map(norm).sort());
}

const NAMES = [
  "mtu",
  "txqlen",
  "group",
  "promiscuity",
  "allmulti",
  "ifalias",
  "tos",
  "advmss",
  "weight",
  "realm",
  "pref",
  "ipproto",
  "dport",
  "x_new_kernel_field",
  ...(LEFT_OUT.link as string[]),
];
const value = fc.oneof(
  fc.integer({ min: 0, max: 3 }),
  fc.constantFrom("a", "b", "0x04"),
  fc.constant(null),
);

describe("property: no finding only when the independent oracle agrees", () => {
  it("over links, routes, rules and nexthops with one attribute planted, changed or dropped", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("link", "route", "rule", "nexthop"),
        fc.array(fc.dictionary(fc.constantFrom(...NAMES), value, { maxKeys: 4 }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.nat(),
        fc.constantFrom(...NAMES),
        fc.option(value, { nil: undefined }),
        (kind, extras, which, name, planted) => {
          const base = extras.map((e, i): Json => {
            const id = {
              link: { ifname: `e${i}`, address: `02:00:00:00:00:0${i}`, link_type: "ether" },
              route: { family: "inet", dst: `10.${i}.0.0/16`, table: "main" },
              rule: { family: "inet", priority: i },
              nexthop: { id: i + 1 },
            }[kind] as Json;
            return { ...e, ...id };
          });
          const other = structuredClone(base);
          const target = other[which % other.length] as Json;
          if (planted === undefined) delete target[name];
          else target[name] = planted;
          const key = { link: "links", route: "routes", rule: "rules", nexthop: "nexthops" }[
            kind
          ] as "links";
          const findings = compareComplete(emptyRead({ [key]: base }), emptyRead({ [key]: other }));
          expect(findings.length === 0).toBe(oracleEqual(kind, base, other));
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe("a link on one side only", () => {
  it("is one finding: its own sysctl files are not each another", () => {
    const fresh = new Map([["ipv6/conf/default/mtu", "1280"]]);
    const l = (ifname: string, address: string) => ({ ifname, address, link_type: "ether" });
    const pod = emptyRead({
      fresh,
      links: [l("eth0", "02:00:00:00:00:01")],
      sysctls: new Map([["ipv6/conf/eth0/mtu", "1500"]]),
    });
    const guest = emptyRead({
      fresh,
      links: [l("eth0", "02:00:00:00:00:01"), l("gst0p", "02:00:00:00:00:02")],
      sysctls: new Map([
        ["ipv6/conf/eth0/mtu", "1400"],
        ["ipv6/conf/gst0p/mtu", "1500"],
      ]),
    });
    expect(compareComplete(pod, guest).map((f) => [f.what, f.field])).toEqual([
      ["link gst0p", "guest only"],
      ["sysctl net.ipv6.conf.eth0.mtu", "value"],
    ]);
  });
});
