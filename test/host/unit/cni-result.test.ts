/** requestsFromCniResult: CNI 0.3/0.4/1.x results to Kata requests, and every refusal. */
import { toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { InterfaceSchema, RouteSchema } from "../../../src/gen/types_pb";
import { CniResultError, requestsFromCniResult } from "../../../src/host/pod/cni-result";

const MAC = "62:F5:74:89:88:1F";

type Json = Record<string, unknown>;

function parse(doc: unknown) {
  const r = requestsFromCniResult(JSON.stringify(doc));
  return {
    interfaces: r.interfaces.map((i) => toJson(InterfaceSchema, i) as Json),
    routes: r.routes.map((x) => toJson(RouteSchema, x)),
    skipped: r.skipped,
    neighbors: r.neighbors,
  };
}

describe("requestsFromCniResult", () => {
  it("ptp's 1.0.0 result: the sandbox interface, its address, the default via the ip's gateway", () => {
    expect(
      parse({
        cniVersion: "1.0.0",
        interfaces: [
          { name: "vethdc9bc6a1", mac: "96:5d:13:71:f3:0a" },
          { name: "eth0", mac: MAC, sandbox: "/run/netns/pod" },
        ],
        ips: [{ interface: 1, address: "10.248.246.146/28", gateway: "10.248.246.145" }],
        routes: [{ dst: "0.0.0.0/0" }],
        dns: {},
      }),
    ).toEqual({
      interfaces: [
        {
          device: "eth0",
          name: "eth0",
          IPAddresses: [{ address: "10.248.246.146", mask: "28" }],
          hwAddr: "62:f5:74:89:88:1f",
        },
      ],
      routes: [{ gateway: "10.248.246.145", device: "eth0" }],
      skipped: [{ name: "vethdc9bc6a1", why: "not in the sandbox (host side)", hostSide: true }],
      neighbors: [],
    });
  });

  it("0.4.0 with versions, /32 address, gateway outside every subnet: link-scope host route first", () => {
    const r = parse({
      cniVersion: "0.4.0",
      interfaces: [{ name: "eth0", mac: MAC, sandbox: "/proc/1/ns/net" }],
      ips: [
        { version: "4", interface: 0, address: "192.0.2.7/32", gateway: "169.254.1.1" },
        { version: "6", interface: 0, address: "2001:db8::7/64", gateway: "2001:db8::1" },
      ],
      routes: [
        { dst: "0.0.0.0/0" },
        { dst: "::/0" },
        { dst: "198.51.100.9/24", gw: "169.254.1.1" },
      ],
    });
    expect(r.routes).toEqual([
      { dest: "169.254.1.1/32", device: "eth0", source: "192.0.2.7", scope: 253 },
      { gateway: "169.254.1.1", device: "eth0" },
      { gateway: "2001:db8::1", device: "eth0", family: "v6" },
      { dest: "198.51.100.0/24", gateway: "169.254.1.1", device: "eth0" },
    ]);
    expect(r.interfaces[0]?.IPAddresses).toEqual([
      { address: "192.0.2.7", mask: "32" },
      { family: "v6", address: "2001:db8::7", mask: "64" },
    ]);
  });

  it("two sandbox interfaces: a route goes where its gateway is on-link; MTU from 1.1", () => {
    const r = parse({
      cniVersion: "1.1.0",
      interfaces: [
        { name: "eth0", mac: "02:00:00:00:00:01", sandbox: "/x", mtu: 1450 },
        { name: "net1", mac: "02:00:00:00:00:02", sandbox: "/x" },
      ],
      ips: [
        { interface: 0, address: "10.1.0.2/24" },
        { interface: 1, address: "10.2.0.2/24", gateway: "10.2.0.1" },
      ],
      routes: [{ dst: "10.9.0.0/16", gw: "10.2.0.1" }, { dst: "10.8.0.0/16" }],
    });
    expect(r.routes).toEqual([
      { dest: "10.9.0.0/16", gateway: "10.2.0.1", device: "net1" },
      { dest: "10.8.0.0/16", device: "eth0" },
    ]);
    expect(r.interfaces.map((i) => i.mtu)).toEqual(["1450", undefined]);
  });

  it("an ip without interface index belongs to the only sandbox interface", () => {
    const r = parse({
      cniVersion: "0.3.1",
      interfaces: [{ name: "eth0", mac: MAC, sandbox: "/x" }],
      ips: [{ version: "4", address: "10.0.0.2/24" }],
    });
    expect(r.interfaces[0]?.IPAddresses).toEqual([{ address: "10.0.0.2", mask: "24" }]);
    expect(r.routes).toEqual([]);
  });
});

describe("requestsFromCniResult: what it refuses", () => {
  const base = { cniVersion: "1.0.0", interfaces: [{ name: "eth0", mac: MAC, sandbox: "/x" }] };
  it.each<[string, unknown, RegExp]>([
    ["not JSON", "{", /^not JSON: /],
    ["an array", [], /expected a JSON object/],
    ["no version", { interfaces: [] }, /^cniVersion: undefined is not supported/],
    ["0.2.0", { cniVersion: "0.2.0", ip4: {} }, /^cniVersion: "0\.2\.0" is not supported/],
    [
      "interfaces not a list",
      { cniVersion: "1.0.0", interfaces: {} },
      /^interfaces: \{\} is not a list of objects/,
    ],
    [
      "no sandbox interface",
      { cniVersion: "1.0.0", interfaces: [{ name: "v", mac: MAC }] },
      /no interface with a sandbox/,
    ],
    [
      "bad MAC",
      { cniVersion: "1.0.0", interfaces: [{ name: "eth0", mac: "62:f5", sandbox: "/x" }] },
      /^interfaces\[0\]\.mac: "62:f5" is not a MAC/,
    ],
    [
      "nameless",
      { cniVersion: "1.0.0", interfaces: [{ mac: MAC, sandbox: "/x" }] },
      /^interfaces\[0\]\.name: undefined is not a name/,
    ],
    [
      "a route MTU out of range",
      {
        ...base,
        ips: [{ interface: 0, address: "10.0.0.2/24" }],
        routes: [{ dst: "10.1.0.0/16", mtu: 1e6 }],
      },
      /^routes\[0\]\.mtu: 1000000 is not a whole number from 0 to 65535/,
    ],
    [
      "bad MTU",
      { ...base, interfaces: [{ name: "eth0", mac: MAC, sandbox: "/x", mtu: -1 }] },
      /^interfaces\[0\]\.mtu: -1/,
    ],
    [
      "address without prefix",
      { ...base, ips: [{ interface: 0, address: "10.0.0.2" }] },
      /^ips\[0\]\.address: "10\.0\.0\.2" is not a CIDR/,
    ],
    [
      "bad address",
      { ...base, ips: [{ interface: 0, address: "10.0.0.256/24" }] },
      /^ips\[0\]\.address: "10\.0\.0\.256" is not an IP address/,
    ],
    [
      "prefix too long",
      { ...base, ips: [{ interface: 0, address: "10.0.0.2/33" }] },
      /^ips\[0\]\.address: "10\.0\.0\.2\/33" has an invalid prefix length/,
    ],
    [
      "host-side index",
      { ...base, ips: [{ interface: 3, address: "10.0.0.2/24" }] },
      /^ips\[0\]\.interface: 3 is not the index of a sandbox interface/,
    ],
    [
      "version mismatch",
      { ...base, ips: [{ version: "6", interface: 0, address: "10.0.0.2/24" }] },
      /^ips\[0\]\.version: "6" does not match the IPv4 address/,
    ],
    [
      "gateway of the other family",
      { ...base, ips: [{ interface: 0, address: "10.0.0.2/24", gateway: "fe80::1" }] },
      /^ips\[0\]\.gateway: "fe80::1" is IPv6, expected IPv4/,
    ],
    [
      "route without an interface of its family",
      { ...base, ips: [{ interface: 0, address: "10.0.0.2/24" }], routes: [{ dst: "::/0" }] },
      /^routes\[0\]\.dst: "::\/0" has no sandbox interface with an IPv6 address/,
    ],
    [
      "route gw of the other family",
      {
        ...base,
        ips: [{ interface: 0, address: "10.0.0.2/24" }],
        routes: [{ dst: "0.0.0.0/0", gw: "::1" }],
      },
      /^routes\[0\]\.gw: "::1" is IPv6, expected IPv4/,
    ],
  ])("refuses %s", (_name, doc, message) => {
    const text = typeof doc === "string" ? doc : JSON.stringify(doc);
    expect(() => requestsFromCniResult(text)).toThrow(CniResultError);
    expect(() => requestsFromCniResult(text)).toThrow(message);
  });
});
