/** planLinksRestore (names back, what the downs cost the links) and planStateRestore's routes. */
import { describe, expect, it } from "vitest";
import type { FullState } from "../../src/net/model/full-state";
import type { Address, Link, Route } from "../../src/net/model/model";
import { swapName } from "../../src/net/plan/plan-link";
import { planLinksRestore, planStateRestore } from "../../src/net/plan/plan-restore";

const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];

const a = (family: 4 | 6, cidr: string, scope = "global"): Address => {
  const [address = "", prefix = ""] = cidr.split("/");
  return { family, address, prefix: Number(prefix), scope };
};

function link(index: number, name: string, addresses: Address[], flags = UP): Link {
  return {
    index,
    name,
    mac: `02:00:00:00:00:0${index}`,
    mtu: 1500,
    flags,
    kind: "veth",
    addresses,
  };
}

describe("planLinksRestore", () => {
  it("a renamed link that is up: extra IPv6 addresses deleted before the down, the kept ones put back after it", () => {
    const before = [link(2, "ens3", [a(4, "10.0.0.3/24"), a(6, "fd00::3/64")])];
    const now = [link(2, "eth0", [a(4, "10.0.0.3/24"), a(6, "fd00::3/64"), a(6, "fd00::9/64")])];
    expect(planLinksRestore(before, now)).toEqual([
      "addr del fd00::9/64 dev eth0",
      "link set dev eth0 down",
      `link set dev eth0 name ${swapName(2)}`,
      `link set dev ${swapName(2)} name ens3`,
      "link set dev ens3 up",
      // once up: the kernel's prefix route then keeps a finite lifetime's expiry
      "addr replace fd00::3/64 dev ens3 nodad",
    ]);
  });

  it("a renamed link that is down keeps its addresses: only the name goes back", () => {
    const down = ["BROADCAST", "MULTICAST"];
    const before = [link(2, "ens3", [a(6, "fd00::3/64")], down)];
    const now = [link(2, "eth0", [a(6, "fd00::3/64")], down)];
    expect(planLinksRestore(before, now)).toEqual([
      `link set dev eth0 name ${swapName(2)}`,
      `link set dev ${swapName(2)} name ens3`,
    ]);
  });
});

describe("planStateRestore", () => {
  const route = (over: Partial<Route>): Route => ({
    family: 6,
    table: 255,
    dst: "ff00::/8",
    dev: "ens3",
    scope: 0,
    metric: 256,
    onlink: false,
    mtu: 0,
    protocol: "kernel",
    type: "multicast",
    ...over,
  });
  const state = (routes: Route[]): FullState => ({
    links: [],
    routes,
    rules: [],
    neighbors: [],
    sysctls: new Map(),
  });

  it("leaves table local's kernel routes to the kernel (ff00::/8 comes back with carrier, after the read)", () => {
    const mine = route({ table: 254, dst: "2001:db8:9::/64", protocol: "boot", type: "unicast" });
    const before = state([route({}), mine]);
    expect(planStateRestore(before, state([])).batch).toEqual([
      "route replace 2001:db8:9::/64 dev ens3 scope 0 metric 256 table main",
    ]);
  });
});
