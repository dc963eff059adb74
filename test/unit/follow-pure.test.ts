/**
 * follow's pure parts: what a line of `ip monitor all-nsid` says, which
 * neighbour lines wake nobody, a netns file's name, Kata's state files
 * parsed (Go shim persist.json, runtime-rs state.json), an agent URL
 * checked, and --status-addr.
 */
import { describe, expect, it } from "vitest";
import { AgentUrlError, checkAgentUrl } from "../../src/host/follow/agent-url";
import { ignoredNeighbour, lineNsid, netnsName } from "../../src/host/follow/node-monitor";
import { parsePersist, parseRuntimeRsState } from "../../src/host/follow/sandbox-files";
import { parseStatusAddr } from "../../src/host/follow/status-server";

describe("follow, pure", () => {
  it("reads the nsid of an all-nsid line", () => {
    expect(lineNsid("[nsid 3][ROUTE]192.0.2.0/24 via 10.0.0.1 dev eth0")).toBe(3);
    expect(lineNsid("[nsid current][LINK]2: eth0")).toBe("current");
    expect(lineNsid("    link/ether 02:00:00:00:00:01")).toBeUndefined();
  });

  it("ignores multicast and NOARP neighbour lines only", () => {
    expect(
      ignoredNeighbour("[nsid 14][NEIGH]Deleted ff02::16 dev if2 lladdr 33:33:00:00:00:16 NOARP "),
    ).toBe(true);
    expect(
      ignoredNeighbour("[nsid 1][NEIGH]224.0.0.22 dev eth0 lladdr 01:00:5e:00:00:16 NOARP"),
    ).toBe(true);
    expect(
      ignoredNeighbour("[nsid 1][NEIGH]10.0.0.1 dev eth0 lladdr 02:00:00:00:0b:01 PERMANENT"),
    ).toBe(false);
  });

  it("names a netns file under /run/netns or /var/run/netns, nothing else", () => {
    expect(netnsName("/var/run/netns/cni-1234")).toBe("cni-1234");
    expect(netnsName("/run/netns/pod1")).toBe("pod1");
    expect(netnsName("/proc/42/ns/net")).toBeUndefined();
    expect(netnsName("/run/netns/sub/x")).toBeUndefined();
  });

  it("parses the Go shim's persist.json and runtime-rs's state.json by Kata's field names", () => {
    const go = JSON.stringify({
      AgentState: { URL: "vsock://3:1024" },
      Network: { NetworkID: "/var/run/netns/cni-1", Endpoints: [], NetworkCreated: true },
    });
    expect(parsePersist(go)).toEqual({
      ok: true,
      facts: { netns: "/var/run/netns/cni-1", agentUrl: "vsock://3:1024" },
    });
    expect(parsePersist(JSON.stringify({ AgentState: { URL: "" }, Network: {} }))).toEqual({
      ok: true,
      facts: {},
    });
    expect(parsePersist('{"Network": {"NetworkID": 5}}')).toEqual({
      ok: false,
      why: "Network.NetworkID is not a string",
    });
    expect(parsePersist('{"Network": ').ok).toBe(false);
    expect(parsePersist("[1]")).toEqual({ ok: false, why: "not a JSON object" });
    expect(parseRuntimeRsState(JSON.stringify({ hypervisor: { netns: "/run/netns/p" } }))).toEqual({
      ok: true,
      facts: { netns: "/run/netns/p" },
    });
  });

  it("takes the addresses netagentctl dials and names an unknown scheme", () => {
    expect(checkAgentUrl("hvsock:///run/vc/firecracker/x/root/kata.hvsock:1024", "s")).toBe(
      "hvsock:///run/vc/firecracker/x/root/kata.hvsock:1024",
    );
    expect(checkAgentUrl("vsock://3:1024", "s")).toBe("vsock://3:1024");
    expect(() => checkAgentUrl("remote://10.0.0.1:1024", "s")).toThrow(/unknown scheme "remote"/);
    expect(() => checkAgentUrl("serial:///dev/vport0p1", "s")).toThrow(AgentUrlError);
    expect(() => checkAgentUrl("garbage", "s")).toThrow(AgentUrlError);
  });

  it("parses --status-addr", () => {
    expect(parseStatusAddr("127.0.0.1:9464")).toEqual({ hostname: "127.0.0.1", port: 9464 });
    expect(parseStatusAddr(":9464")).toEqual({ hostname: "127.0.0.1", port: 9464 });
    expect(parseStatusAddr("[::1]:9464")).toEqual({ hostname: "::1", port: 9464 });
    expect(parseStatusAddr("unix:///run/f.sock")).toEqual({ unix: "/run/f.sock" });
    expect(() => parseStatusAddr("127.0.0.1:0")).toThrow(/port out of range/);
    expect(() => parseStatusAddr("unix://rel")).toThrow(/absolute/);
  });
});
