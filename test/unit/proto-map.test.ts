/** Model -> Kata protobuf shapes, from the recorded ip fixtures through the parsers. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { IPFamily } from "../../src/gen/types_pb";
import type { Route } from "../../src/net/model/model";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";
import { parseLinks, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { linkToProto, routeToProto } from "../../src/wire/kata-map";

const fixture = (name: string) =>
  splitJsonDocuments(readFileSync(new URL(`../fixtures/ip/${name}`, import.meta.url), "utf8"))[0];

const links = parseLinks(fixture("addr-show.out"));
const routes = [
  ...parseRoutes(fixture("route-show-main.out"), 4),
  ...parseRoutes(fixture("route6-show-main.out"), 6),
];

describe("linkToProto", () => {
  it("gives the MAC in lower case, every address with its true family (Kata inverts them)", () => {
    const eth0 = links.find((l) => l.name === "eth0");
    if (!eth0) throw new Error("fixture lacks eth0");
    const p = linkToProto(eth0, "02/00");
    expect(p.hwAddr).toBe("02:aa:bb:cc:dd:01"); // created as 02:AA:bb:...
    expect(p.name).toBe("eth0");
    expect(p.device).toBe("eth0");
    expect(p.mtu).toBe(1500n);
    expect(p.type).toBe("veth");
    expect(p.devicePath).toBe("02/00");
    expect(p.IPAddresses.map((a) => [a.family, a.address, a.mask])).toEqual([
      [IPFamily.v4, "10.248.246.146", "28"],
      [IPFamily.v4, "10.248.246.150", "28"],
      [IPFamily.v6, "2001:db8::146", "64"],
      [IPFamily.v6, "fe80::aa:bbff:fecc:dd01", "64"],
    ]);
    // BROADCAST | MULTICAST | UP | LOWER_UP
    expect(p.rawFlags).toBe(0x2 | 0x1000 | 0x1 | 0x10000);
  });

  it("carries NOARP in raw_flags and the MTU as set", () => {
    const eth1 = links.find((l) => l.name === "eth1");
    if (!eth1) throw new Error("fixture lacks eth1");
    const p = linkToProto(eth1);
    expect(p.rawFlags & 0x80).toBe(0x80);
    expect(p.mtu).toBe(9000n);
    expect(p.devicePath).toBe("");
  });

  it("lists lo too, as Kata does, with its zero MAC and loopback flag", () => {
    const lo = links.find((l) => l.name === "lo");
    if (!lo) throw new Error("fixture lacks lo");
    const p = linkToProto(lo);
    expect(p.hwAddr).toBe("00:00:00:00:00:00");
    expect(p.rawFlags & 0x8).toBe(0x8);
    expect(p.IPAddresses.map((a) => a.family)).toEqual([IPFamily.v4, IPFamily.v6]);
  });
});

describe("routeToProto", () => {
  const find = (family: 4 | 6, dst: string) => {
    const r = routes.find((x) => x.family === family && x.dst === dst);
    if (!r) throw new Error(`fixture lacks ${dst}`);
    return routeToProto(r);
  };

  it("gives the IPv4 default as 0.0.0.0/0 with its gateway (never Kata's 0.0.0.0)", () => {
    expect(find(4, "0.0.0.0/0")).toMatchObject({
      dest: "0.0.0.0/0",
      gateway: "10.248.246.145",
      device: "eth0",
      source: "",
      scope: 0,
      family: IPFamily.v4,
      flags: 0,
      mtu: 0,
    });
  });

  it("gives the IPv6 default as ::/0 and family v6 (never Kata's ::1)", () => {
    expect(find(6, "::/0")).toMatchObject({
      dest: "::/0",
      gateway: "2001:db8::1",
      family: IPFamily.v6,
    });
  });

  it("keeps the real destination of gateway routes, prefsrc as source, scope, onlink as flags 4, mtu", () => {
    expect(find(4, "10.248.246.144/28")).toMatchObject({
      dest: "10.248.246.144/28",
      gateway: "10.248.246.145",
      source: "10.248.246.146",
    });
    expect(find(4, "10.248.246.145/32")).toMatchObject({ scope: 253, source: "10.248.246.146" });
    expect(find(4, "10.9.0.0/16")).toMatchObject({ flags: 4, gateway: "169.254.1.1" });
    expect(find(4, "10.10.0.0/16")).toMatchObject({ mtu: 1400 });
    expect(find(6, "2001:db8:5::/48")).toMatchObject({ mtu: 1300, gateway: "fe80::1" });
  });

  it("maps a bare model route field by field", () => {
    const r: Route = {
      family: 6,
      dst: "2001:db8::/64",
      dev: "eth1",
      scope: 0,
      metric: 256,
      onlink: false,
      mtu: 0,
      protocol: "kernel",
      type: "unicast",
    };
    expect(routeToProto(r)).toMatchObject({
      dest: "2001:db8::/64",
      gateway: "",
      device: "eth1",
      source: "",
      family: IPFamily.v6,
      flags: 0,
    });
  });
});
