/** Address parsing and formatting, table-driven. */
import { describe, expect, it } from "vitest";
import {
  type AgentAddress,
  DEFAULT_ADDRESS,
  formatAddress,
  parseAddress,
  VMADDR_CID_ANY,
} from "../../src/transport/address";

const good: [string, AgentAddress][] = [
  ["vsock://-1:1024", { kind: "vsock", cid: VMADDR_CID_ANY, port: 1024 }],
  ["vsock://3:1024", { kind: "vsock", cid: 3, port: 1024 }],
  ["vsock://4294967295:0", { kind: "vsock", cid: VMADDR_CID_ANY, port: 0 }],
  ["vsock://2:4294967295", { kind: "vsock", cid: 2, port: 0xffff_ffff }],
  ["unix:///run/netagent.sock", { kind: "unix", path: "/run/netagent.sock" }],
  ["unix:///a", { kind: "unix", path: "/a" }],
  ["serial:///dev/vport1p1", { kind: "serial", path: "/dev/vport1p1" }],
  ["serial://agent.channel.0", { kind: "serial-name", name: "agent.channel.0" }],
  ["serial://org.kata-containers_1", { kind: "serial-name", name: "org.kata-containers_1" }],
  [
    "hvsock:///run/vc/firecracker/root/kata.hvsock:1024",
    {
      kind: "hvsock",
      path: "/run/vc/firecracker/root/kata.hvsock",
      port: 1024,
    },
  ],
  // The last colon splits path and port, so a path may hold colons.
  ["hvsock:///tmp/a:b.sock:2", { kind: "hvsock", path: "/tmp/a:b.sock", port: 2 }],
];

const bad: [string, RegExp][] = [
  ["", /expected SCHEME/],
  ["/run/netagent.sock", /expected SCHEME/],
  ["VSOCK://3:1024", /expected SCHEME/],
  ["tcp://127.0.0.1:1024", /unknown scheme tcp/],
  ["vsock://", /expected vsock:\/\/CID:PORT/],
  ["vsock://3", /expected vsock:\/\/CID:PORT/],
  ["vsock://3:", /expected vsock:\/\/CID:PORT/],
  ["vsock://:1024", /expected vsock:\/\/CID:PORT/],
  ["vsock://-2:1024", /expected vsock:\/\/CID:PORT/],
  ["vsock://3:1024:5", /expected vsock:\/\/CID:PORT/],
  ["vsock://3:10x", /expected vsock:\/\/CID:PORT/],
  ["vsock://4294967296:1", /CID out of range/],
  ["vsock://3:4294967296", /port out of range/],
  ["vsock://3:99999999999", /expected vsock:\/\/CID:PORT/],
  ["unix://", /expected unix:\/\/\/absolute\/path/],
  ["unix://relative.sock", /expected unix:\/\/\/absolute\/path/],
  ["unix:///", /expected unix:\/\/\/absolute\/path/],
  ["unix:///a\0b", /NUL in path/],
  ["serial://", /expected serial:\/\/\/dev\/PATH or serial:\/\/NAME/],
  ["serial://has space", /expected serial/],
  ["serial://a/b", /expected serial/],
  ["hvsock:///tmp/x.sock", /expected hvsock/],
  ["hvsock://x.sock:1", /expected hvsock/],
  ["hvsock:///tmp/x.sock:4294967296", /port out of range/],
];

describe("parseAddress", () => {
  it.each(good)("parses %j", (text, address) => {
    expect(parseAddress(text)).toEqual(address);
  });

  it.each(bad)("refuses %j, naming the value and why", (text, why) => {
    expect(() => parseAddress(text)).toThrow(why);
    expect(() => parseAddress(text)).toThrow(`invalid address ${JSON.stringify(text)}`);
  });

  it("has the Kata default vsock://-1:1024", () => {
    expect(parseAddress(DEFAULT_ADDRESS)).toEqual({
      kind: "vsock",
      cid: VMADDR_CID_ANY,
      port: 1024,
    });
  });
});

describe("formatAddress", () => {
  it.each(good.filter(([t]) => !t.startsWith("vsock://4294967295")))(
    "round-trips %j",
    (text, address) => {
      expect(formatAddress(address)).toBe(text);
    },
  );

  it("writes CID any as -1", () => {
    expect(formatAddress(parseAddress("vsock://4294967295:7"))).toBe("vsock://-1:7");
  });
});
