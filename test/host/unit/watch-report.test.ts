/** What the watch says: request diffs, departed NICs, the text and JSON lines, escaping. */
import { describe, expect, it } from "vitest";
import { departedMacs } from "../../../src/host/retire-nics";
import { requestsFromState } from "../../../src/host/sync";
import { renderJson, renderText, type WatchEvent } from "../../../src/host/watch-output";
import { diffRequests, sameRequests } from "../../../src/host/watch-report";
import type { NetState } from "../../../src/net/model";

const link = (name: string, mac: string, addrs: string[], mtu = 1500) => ({
  index: 2,
  name,
  mac,
  mtu,
  kind: "veth",
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  addresses: addrs.map((a) => {
    const [address, prefix] = a.split("/");
    return {
      family: (address?.includes(":") ? 6 : 4) as 4 | 6,
      address: address as string,
      prefix: Number(prefix),
      scope: "global",
    };
  }),
});

const route = (dst: string, gateway: string | undefined, dev: string) => ({
  family: 4 as const,
  dst,
  ...(gateway ? { gateway } : {}),
  dev,
  table: "main",
  protocol: "boot",
  scope: 0,
  type: "unicast",
  metric: 0,
  onlink: false,
  mtu: 0,
});

function state(links: ReturnType<typeof link>[], routes: ReturnType<typeof route>[]): NetState {
  return { links, routes, neighbors: [] } as unknown as NetState;
}

const A = "02:00:00:00:00:0a";
const B = "02:00:00:00:00:0b";

describe("diffRequests", () => {
  const base = requestsFromState(
    state([link("eth0", A, ["10.0.0.2/24"])], [route("0.0.0.0/0", "10.0.0.1", "eth0")]),
  );

  it("the same read twice is the same, and nothing changed", () => {
    const again = requestsFromState(
      state([link("eth0", A, ["10.0.0.2/24"])], [route("0.0.0.0/0", "10.0.0.1", "eth0")]),
    );
    expect(sameRequests(base, again)).toBe(true);
    const d = diffRequests(base, again);
    expect(d).toMatchObject({
      routesAdded: [],
      routesRemoved: [],
      interfacesChanged: [],
      other: false,
    });
  });

  it("names routes added and removed, addresses and MTU changed, NICs added and gone", () => {
    const next = requestsFromState(
      state(
        [link("eth0", A, ["10.0.0.3/24"], 9000), link("eth1", B, ["10.1.0.2/24"])],
        [route("192.0.2.0/24", "10.0.0.1", "eth0")],
      ),
    );
    const d = diffRequests(base, next);
    expect(d.routesAdded).toEqual(["192.0.2.0/24 via 10.0.0.1 dev eth0"]);
    expect(d.routesRemoved).toEqual(["default via 10.0.0.1 dev eth0"]);
    expect(d.interfacesChanged).toEqual(["eth0: +10.0.0.3/24 -10.0.0.2/24 mtu 1500->9000"]);
    expect(d.interfacesAdded).toEqual([`eth1 ${B}`]);
    expect(diffRequests(next, base).interfacesRemoved).toEqual([`eth1 ${B}`]);
    expect(sameRequests(base, next)).toBe(false);
  });

  it("departedMacs: synced before, not in the pod now (case does not matter)", () => {
    expect(departedMacs([A.toUpperCase(), B], base)).toEqual([B]);
    expect(departedMacs([], base)).toEqual([]);
  });
});

describe("watch lines", () => {
  const at = "2026-11-30T13:00:00.123Z";
  const resync: WatchEvent = {
    event: "resync",
    at,
    seq: 2,
    ms: 12.34,
    initial: false,
    trigger: { route: 3 },
    reconnected: false,
    via: "kata",
    changes: {
      interfacesAdded: [],
      interfacesRemoved: [],
      interfacesChanged: ["e\x1b[31mvil: +10.0.0.3/24"],
      routesAdded: ["192.0.2.0/24 via 10.0.0.1 dev eth0"],
      routesRemoved: [],
      neighborsAdded: [],
      neighborsRemoved: [],
      rules: false,
      other: false,
    },
    retired: [{ hwAddr: B, name: "eth1", found: true, flushed: ["10.1.0.2/24"] }],
    interfaces: 1,
    routes: 1,
    neighbors: 0,
    waited: [],
    guestRoutes: 3,
    packetFilter: "iptables no rules on either side, ip6tables no rules on either side",
  };

  it("text: one line, what changed, how long, control characters escaped", () => {
    const line = renderText(resync);
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toContain("\n");
    expect(line).toContain("13:00:00.123 resync 2 in 12 ms after 3 route event(s)");
    expect(line).toContain("routes +1 -0 (+192.0.2.0/24 via 10.0.0.1 dev eth0)");
    expect(line).toContain("NIC eth1 02:00:00:00:00:0b left the pod");
    expect(line).toContain("e\\u001b[31mvil");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: checking there is none
    expect(line).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
  });

  it("JSON: one object per line, parseable back", () => {
    const line = renderJson(resync);
    expect(line.split("\n")).toHaveLength(2);
    expect(JSON.parse(line)).toEqual(resync);
  });

  it("JSON: C1 and bidi controls from the guest leave as \\u escapes, the value unchanged", () => {
    const evil = {
      ...resync,
      changes: { ...(resync as { changes: object }).changes, interfacesChanged: ["a\x9bb\u202ec"] },
    } as WatchEvent;
    const line = renderJson(evil);
    expect(line).not.toMatch(/[\u0080-\u009f\u202e]/);
    expect(JSON.parse(line)).toEqual(evil);
  });
});
