/**
 * tun and tap devices in Apply: what `ip -d -j link` shows of
 * one (vocabulary/tuntap.ts, names back to ids through account-ids.ts),
 * the lines that make one or find it by name (plan-tuntap.ts, in the link
 * phase), the restore's deletes, validation with its bound (64), and what
 * is left out with a device that cannot be made (plan-culprit.ts).
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LIMITS, validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { parseAccounts } from "../../src/net/iproute/account-ids";
import type { DesiredLink, DesiredState } from "../../src/net/model/full-state";
import type { Link } from "../../src/net/model/model";
import { parseLinks } from "../../src/net/parse/parse-ip-json";
import { culpritOf, fieldsThrough, withoutFields } from "../../src/net/plan/plan-culprit";
import { planLinkPhase } from "../../src/net/plan/plan-link-phase";
import { planLinksRestore } from "../../src/net/plan/plan-restore";
import { findTuntap } from "../../src/net/plan/plan-tuntap";
import type { TtrpcError } from "../../src/ttrpc/codes";

const TUN = { mode: "tun" as const, multiQueue: false, pi: false, vnetHdr: false, persist: true };

const linkJson = (ifindex: number, ifname: string, info_data: Record<string, unknown>) => ({
  ifindex,
  ifname,
  flags: ["POINTOPOINT", "MULTICAST", "NOARP"],
  mtu: 1500,
  linkinfo: { info_kind: "tun", info_data },
  addr_info: [],
});

const tunLink = (index: number, name: string, extra: Partial<Link> = {}): Link => ({
  index,
  name,
  mac: "",
  mtu: 1500,
  flags: ["POINTOPOINT", "MULTICAST", "NOARP"],
  kind: "tun",
  addresses: [],
  tuntap: TUN,
  ...extra,
});

const want = (extra: Partial<DesiredLink> = {}): DesiredLink => ({
  mac: "",
  name: "tun0",
  mtu: 0,
  noarp: true,
  up: true,
  addresses: [],
  tuntap: TUN,
  ...extra,
});

describe("reading tun and tap devices", () => {
  it("reads mode, flags and persistence; owners by number or by name through /etc/passwd and /etc/group", () => {
    const [tun, tap] = parseLinks([
      linkJson(2, "tun0", {
        type: "tun",
        pi: false,
        vnet_hdr: false,
        multi_queue: false,
        persist: true,
      }),
      linkJson(3, "tap0", {
        type: "tap",
        pi: true,
        vnet_hdr: true,
        multi_queue: true,
        persist: false,
        user: "root",
        group: 100,
      }),
    ]);
    expect(tun?.tuntap).toEqual(TUN);
    expect(tap?.tuntap).toEqual({
      mode: "tap",
      multiQueue: true,
      pi: true,
      vnetHdr: true,
      persist: false,
      user: 0,
      group: 100,
    });
  });

  it("parses account files as getpwnam reads them: the first entry of a name", () => {
    const ids = parseAccounts(
      "root:x:0:0::/root:/bin/sh\nbad line\nuser:x:1000:1000::\nuser:x:7:7::\n",
    );
    expect([...ids]).toEqual([
      ["root", 0],
      ["user", 1000],
    ]);
  });
});

describe("planning tun and tap devices", () => {
  it("makes a missing device, then its MTU, addresses and up, in that order", () => {
    const phase = planLinkPhase(
      [],
      [
        want({
          mtu: 1400,
          addresses: [{ family: 4, address: "10.9.0.1", prefix: 24 }],
          tuntap: { ...TUN, pi: true, user: 0, group: 5 },
        }),
      ],
    );
    expect(phase.lines).toEqual([
      "tuntap add dev tun0 mode tun pi user 0 group 5",
      "link set dev tun0 mtu 1400",
      "addr add 10.9.0.1/24 dev tun0",
      "link set dev tun0 up",
    ]);
    expect(phase.created).toEqual(["tun0"]);
    expect(phase.predicted.map((l) => l.name)).toEqual(["tun0"]);
  });

  it("gives a made tap its MAC; finds a device made alike by name and only configures it", () => {
    const tap = { ...TUN, mode: "tap" as const, multiQueue: true };
    const made = findTuntap(
      [],
      { ...want({ name: "tap0", mac: "02:00:00:00:00:09" }), tuntap: tap },
      0,
    );
    expect("lines" in made && made.lines).toEqual([
      "tuntap add dev tap0 mode tap multi_queue",
      "link set dev tap0 address 02:00:00:00:00:09",
    ]);
    const have = tunLink(4, "tun0", { flags: ["POINTOPOINT", "MULTICAST", "NOARP", "UP"] });
    const phase = planLinkPhase([have], [want()]);
    expect(phase.lines).toEqual([]);
    expect(phase.created).toEqual([]);
  });

  it("reports a name held by a NIC or by a device made otherwise, planning nothing for it", () => {
    const nic: Link = { ...tunLink(2, "tun0"), kind: "veth", mac: "02:00:00:00:00:01" };
    delete nic.tuntap;
    expect(planLinkPhase([nic], [want()]).conflicts).toEqual([
      { name: "tun0", why: "is a veth link in the guest, not a tun/tap device" },
    ]);
    const other = planLinkPhase(
      [tunLink(2, "tun0", { tuntap: { ...TUN, mode: "tap" } })],
      [want()],
    );
    expect(other.lines).toEqual([]);
    expect(other.conflicts[0]?.why).toMatch(/made otherwise in the guest \(tap, not tun\)/);
  });

  it("a restore deletes only the devices the Apply made, known by name and a new ifindex", () => {
    const before = [tunLink(2, "tun1")];
    const now = [tunLink(2, "tun1"), tunLink(7, "tun0"), tunLink(8, "other")];
    expect(planLinksRestore(before, now, ["tun0", "tun1"])).toEqual(["link del dev tun0"]);
  });
});

describe("validating tun and tap devices", () => {
  type Wire = { name: string; mac?: string; tuntap: { mode: string; group?: number } };
  const refuse = (interfaces: Wire[]): string => {
    try {
      validateApply(create(ApplyRequestSchema, { desired: { interfaces } }));
    } catch (err) {
      return (err as TtrpcError).message;
    }
    throw new Error("accepted");
  };
  const tun = (extra: Partial<Wire> = {}): Wire => ({
    name: "tun0",
    tuntap: { mode: "tun" },
    ...extra,
  });

  it("names the field and the value", () => {
    expect(refuse([tun({ tuntap: { mode: "tux" } })])).toBe(
      'desired.interfaces[0].tuntap.mode: "tux" is not "tun" or "tap"',
    );
    expect(refuse([tun({ name: "" })])).toMatch(/^desired\.interfaces\[0\]\.name: "" is empty/);
    expect(refuse([tun({ mac: "02:00:00:00:00:01" })])).toMatch(
      /^desired\.interfaces\[0\]\.mac: "02:00:00:00:00:01" is given for a tun device/,
    );
    expect(refuse([tun({ tuntap: { mode: "tap", group: 0xffffffff } })])).toMatch(
      /^desired\.interfaces\[0\]\.tuntap\.group: 4294967295 is above 4294967294/,
    );
    expect(refuse([tun(), tun()])).toMatch(
      /^desired\.interfaces\[1\]\.name: "tun0" is given to two/,
    );
  });

  it("takes 64 devices and refuses the 65th", () => {
    expect(LIMITS.tuntaps).toBe(64);
    const many = (n: number) => Array.from({ length: n }, (_, i) => tun({ name: `tun${i}` }));
    const ok = validateApply(create(ApplyRequestSchema, { desired: { interfaces: many(64) } }));
    expect(ok.links).toHaveLength(64);
    expect(ok.links[0]).toMatchObject({
      mac: "",
      name: "tun0",
      tuntap: { mode: "tun", persist: true },
    });
    expect(refuse(many(65))).toBe(
      "desired.interfaces: 65 tun/tap devices: at most 64 are accepted",
    );
  });
});

describe("leaving a device out", () => {
  const desired: DesiredState = {
    links: [{ ...want(), name: "tun0" }],
    routes: [
      {
        family: 4,
        table: 254,
        dst: "10.9.0.0/16",
        dev: "tun0",
        scope: 0,
        metric: 0,
        onlink: false,
        mtu: 0,
        protocol: "boot",
        type: "unicast",
      },
      {
        family: 4,
        table: 254,
        dst: "10.8.0.0/16",
        dev: "eth0",
        scope: 0,
        metric: 0,
        onlink: false,
        mtu: 0,
        protocol: "boot",
        type: "unicast",
      },
      {
        family: 4,
        table: 254,
        dst: "10.7.0.0/16",
        dev: "",
        nhid: 2,
        scope: 0,
        metric: 0,
        onlink: false,
        mtu: 0,
        protocol: "boot",
        type: "unicast",
      },
    ],
    rules: [],
    neighbors: [
      { family: 4, ip: "10.9.0.9", dev: "tun0", lladdr: "02:00:00:00:00:09", router: false },
    ],
    sysctls: [
      { key: "net.ipv4.conf.tun0.rp_filter", value: "2" },
      { key: "net.ipv4.conf.eth0.rp_filter", value: "2" },
    ],
    nexthops: [
      {
        id: 1,
        family: 4,
        dev: "tun0",
        onlink: true,
        blackhole: false,
        gateway: "10.9.0.2",
        protocol: "unspec",
      },
      {
        id: 2,
        family: 0,
        dev: "",
        onlink: false,
        blackhole: false,
        group: [{ id: 1, weight: 1 }],
        protocol: "unspec",
      },
    ],
  };

  it("takes what goes through it along: routes, nexthop objects and the routes by them, neighbours, sysctls", () => {
    const through = fieldsThrough(desired, "tun0");
    expect(through).toEqual([
      "desired.nexthops[0]",
      "desired.nexthops[1]",
      "desired.routes[0]",
      "desired.routes[2]",
      "desired.neighbors[0]",
      "desired.sysctls[0]",
    ]);
    const left = withoutFields(desired, new Set(["desired.interfaces[0]", ...through]));
    expect(left.links).toEqual([]);
    expect(left.routes.map((r) => r.dst)).toEqual(["10.8.0.0/16"]);
    expect(left.sysctls.map((s) => s.key)).toEqual(["net.ipv4.conf.eth0.rp_filter"]);
  });

  it("names the device from its refused `tuntap add` line", () => {
    expect(culpritOf("tuntap add dev tun0 mode tun", desired, new Set(), [])).toBe(
      "desired.interfaces[0]",
    );
  });
});
