/**
 * The comparator finds what is planted: two netns built by the same recipe
 * (real `ip`) compare equal, and changing one route's tos, advmss or metric
 * lock, one rule, one neighbour or one sysctl in one of them is reported, in
 * words, as that field. Plus the parts that need no kernel: address order,
 * a missing link's sysctls said once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BuiltPod, buildPod, ipOk } from "./build";
import { compareReads } from "./compare";
import type { NetnsRead } from "./read";
import { readNetns } from "./read";
import type { Recipe } from "./recipe";

const ip = (tags: string[], ...args: string[]) => ({ tool: "ip" as const, args, tags });
const RECIPE: Recipe = {
  seed: 0,
  nics: [{ name: "eth0", kind: "veth", mac: "02:5c:00:00:00:01" }],
  steps: [
    ip([], "link", "set", "eth0", "up"),
    ip([], "address", "add", "10.92.0.2/24", "dev", "eth0"),
    ip([], "-6", "address", "add", "fd5c::2/64", "dev", "eth0", "nodad"),
    ip(
      [],
      "route",
      "add",
      "10.20.0.0/16",
      "via",
      "10.92.0.1",
      "dev",
      "eth0",
      "tos",
      "0x04",
      "table",
      "100",
    ),
    ip(
      [],
      "route",
      "add",
      "10.30.0.0/16",
      "via",
      "10.92.0.1",
      "dev",
      "eth0",
      "advmss",
      "1400",
      "mtu",
      "lock",
      "1400",
    ),
    ip([], "rule", "add", "pref", "100", "from", "10.92.0.0/24", "table", "100"),
    ip(
      [],
      "neigh",
      "add",
      "10.92.0.9",
      "lladdr",
      "02:5c:00:00:00:09",
      "dev",
      "eth0",
      "nud",
      "permanent",
    ),
    { tool: "sysctl", args: ["net.ipv4.conf.eth0.rp_filter=2"], tags: [] },
  ],
};

let a: BuiltPod;
let b: BuiltPod;
beforeAll(async () => {
  [a, b] = await Promise.all([
    buildPod(RECIPE, { guest: false }),
    buildPod(RECIPE, { guest: false }),
  ]);
  expect([...a.dropped, ...b.dropped]).toEqual([]);
});
afterAll(async () => {
  await a?.remove();
  await b?.remove();
});

const reads = async () => Promise.all([readNetns(a.pod), readNetns(b.pod)]);

describe("compareReads on real netns", () => {
  it("finds nothing between two netns the same recipe built, and each planted change as its field", async () => {
    const [ra, rb] = await reads();
    expect(compareReads(ra, rb)).toEqual([]);

    const at = b.pod;
    await ipOk("-n", at, "route", "del", "10.20.0.0/16", "tos", "0x04", "table", "100");
    await ipOk(
      "-n",
      at,
      "route",
      "add",
      "10.20.0.0/16",
      "via",
      "10.92.0.1",
      "dev",
      "eth0",
      "tos",
      "0x08",
      "table",
      "100",
    );
    await ipOk(
      "-n",
      at,
      "route",
      "change",
      "10.30.0.0/16",
      "via",
      "10.92.0.1",
      "dev",
      "eth0",
      "advmss",
      "1300",
      "mtu",
      "1400",
    );
    await ipOk("-n", at, "rule", "del", "pref", "100");
    await ipOk("-n", at, "rule", "add", "pref", "100", "from", "10.92.0.0/24", "table", "200");
    await ipOk(
      "-n",
      at,
      "neigh",
      "change",
      "10.92.0.9",
      "lladdr",
      "02:5c:00:00:00:0a",
      "dev",
      "eth0",
      "nud",
      "permanent",
    );
    await ipOk("netns", "exec", at, "sysctl", "-qw", "net.ipv4.conf.eth0.rp_filter=1");
    const [ra2, rb2] = await reads();
    const texts = compareReads(ra2, rb2).map((d) => d.text);
    expect(texts.sort()).toEqual(
      [
        "route 10.20.0.0/16 table 100 (inet): tos 0x04 in the pod, 0x08 in the guest",
        "route 10.30.0.0/16 table main (inet): metrics.advmss 1400 in the pod, 1300 in the guest",
        "route 10.30.0.0/16 table main (inet): locks mtu in the pod, (empty) in the guest",
        "rule 100 (inet): table 100 in the pod, 200 in the guest",
        "neighbour 10.92.0.9 dev eth0: lladdr 02:5c:00:00:00:09 in the pod, 02:5c:00:00:00:0a in the guest",
        "sysctl net/ipv4/conf/eth0/rp_filter: value 2 in the pod, 1 in the guest",
      ].sort(),
    );
  });
});

describe("compareReads without a kernel", () => {
  const empty = (): NetnsRead => ({
    links: [],
    addresses: [],
    routes: [],
    rules: [],
    neighbours: [],
    nexthops: [],
    sysctls: new Map(),
  });
  const withAddresses = (order: string[]): NetnsRead => ({
    ...empty(),
    addresses: [
      {
        ifname: "eth0",
        address: "02:5c:00:00:00:01",
        link_type: "ether",
        addr_info: order.map((local) => ({
          family: "inet6",
          local,
          prefixlen: 64,
          valid_life_time: 4294967295,
          preferred_life_time: 4294967295,
        })),
      },
    ],
  });

  it("reports the same addresses in another order, as order", () => {
    const d = compareReads(
      withAddresses(["fd00::2", "fd00::1"]),
      withAddresses(["fd00::1", "fd00::2"]),
    );
    expect(d.map((x) => x.text)).toEqual([
      "addresses (inet6) of eth0 in another order: pod fd00::2/64, fd00::1/64; guest fd00::1/64, fd00::2/64",
    ]);
  });

  it("says a link's missing sysctls once, and a single missing key as itself", () => {
    const pod = empty();
    pod.sysctls = new Map([
      ["ipv4/conf/tun0/rp_filter", "0"],
      ["ipv4/conf/tun0/forwarding", "0"],
      ["ipv4/ip_forward", "1"],
    ]);
    expect(compareReads(pod, empty()).map((x) => x.text)).toEqual([
      "pod only: sysctl net/ipv4/ip_forward {value 1}",
      "pod only: the 2 sysctls of net/ipv4/conf/tun0/ (no such directory on the other side)",
    ]);
  });
});
