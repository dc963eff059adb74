/**
 * The generator itself: a seed means one recipe, seeds differ, and over a
 * few hundred seeds it draws every vocabulary item generate.ts lists (a
 * generator that never writes an item cannot find it lost).
 */
import { describe, expect, it } from "vitest";
import { generatePod } from "./generate";

const VOCABULARY = [
  ...[
    "unicast",
    "blackhole",
    "unreachable",
    "prohibit",
    "throw",
    "local",
    "broadcast",
    "anycast",
    "multicast",
    "nat",
  ].map((t) => `route type ${t}`),
  ...["100", "200", "1000000", "default"].map((t) => `route table ${t}`),
  ...[
    "gateway",
    "onlink",
    "multipath",
    "nhid",
    "via inet6",
    "tos",
    "from",
    "pref",
    "realm",
    "expires",
    "src",
    "metric",
    "protocol",
    "scope",
    "append",
  ].map((x) => `route ${x}`),
  ...[
    "mtu",
    "advmss",
    "window",
    "rtt",
    "rttvar",
    "ssthresh",
    "cwnd",
    "initcwnd",
    "initrwnd",
    "quickack",
    "hoplimit",
    "reordering",
    "features",
    "congctl",
    "fastopen_no_cookie",
  ].map((m) => `route ${m}`),
  "route mtu lock",
  ...["object", "group", "blackhole", "dev", "onlink"].map((x) => `nexthop ${x}`),
  ...[
    "from",
    "to",
    "fwmark",
    "ipproto",
    "sport",
    "dport",
    "uidrange",
    "tos",
    "dsfield",
    "iif",
    "oif",
    "iif absent device",
    "oif absent device",
    "l3mdev",
    "realms",
    "protocol",
    "goto",
    "nop",
    "blackhole",
    "unreachable",
    "prohibit",
    "suppress_prefixlength",
    "suppress_ifgroup",
    "not",
    "inet6",
    "without pref",
  ].map((x) => `rule ${x}`),
  ...["permanent", "router", "proxy", "extern_learn"].map((x) => `neighbour ${x}`),
  ...[
    "mtu",
    "mtu below 1280",
    "txqlen",
    "promisc on",
    "allmulticast on",
    "multicast off",
    "dynamic on",
    "trailers off",
    "disable_ipv6",
    "group",
    "alias",
    "arp off",
  ].map((x) => `link ${x}`),
  ...[
    "broadcast",
    "noprefixroute",
    "metric",
    "peer",
    "label",
    "scope",
    "lifetimes",
    "preferred_lft 0",
    "secondary",
    "inet6",
    "home",
    "mngtmpaddr",
    "nodad",
    "user link-local",
  ].map((x) => `address ${x}`),
  "sysctl nic",
  "sysctl dotted nic",
  "sysctl netns",
];

describe("generatePod", () => {
  it("gives the same recipe for the same seed, and another for another seed", () => {
    expect(generatePod(7)).toEqual(generatePod(7));
    const seen = new Set(
      Array.from({ length: 60 }, (_, i) => JSON.stringify(generatePod(i + 1).steps)),
    );
    expect(seen.size).toBe(60);
  });

  it("draws every vocabulary item sync carries within 300 seeds", () => {
    const tags = new Set<string>();
    const kinds = new Set<string>();
    for (let seed = 1; seed <= 300; seed++) {
      const r = generatePod(seed);
      for (const s of r.steps) for (const t of s.tags) tags.add(t);
      for (const n of r.nics) kinds.add(n.kind);
    }
    expect(VOCABULARY.filter((v) => !tags.has(v))).toEqual([]);
    expect([...kinds].sort()).toEqual(["bridge", "tap", "tun", "veth"]);
  });

  it("writes nothing IPv6 for a NIC after its MTU drops below 1280 (the kernel removes IPv6 there)", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const noV6 = new Set<string>();
      for (const s of generatePod(seed).steps) {
        const dev = s.args[s.args.indexOf("dev") + 1] ?? "";
        if (s.tags.includes("link mtu below 1280")) noV6.add(s.args[2] as string);
        if (s.tags.includes("link disable_ipv6"))
          noV6.add((s.args[0] as string).split(".")[3]?.replaceAll("/", ".") as string);
        else if (s.args[0] === "-6" && s.args.includes("dev") && noV6.has(dev))
          throw new Error(`seed ${seed}: ${s.args.join(" ")}`);
      }
    }
  });

  it("gives every veth a distinct MAC and no tun a MAC", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const nics = generatePod(seed).nics;
      const macs = nics.filter((n) => n.kind !== "tun").map((n) => n.mac);
      expect(new Set(macs).size, `seed ${seed}`).toBe(macs.length);
      expect(nics.filter((n) => n.kind === "tun" && n.mac)).toEqual([]);
    }
  });

  it("draws links left down and links without addresses within 100 seeds", () => {
    let down = 0;
    let bare = 0;
    for (let seed = 1; seed <= 100; seed++) {
      const r = generatePod(seed);
      for (const n of r.nics) {
        const on = (s: { args: string[] }) => s.args.includes(n.name);
        if (!r.steps.some((s) => s.tags.includes("link up") && on(s))) down++;
        if (!r.steps.some((s) => s.args.includes("address") && s.args.includes("add") && on(s)))
          bare++;
      }
    }
    expect(down).toBeGreaterThan(0);
    expect(bare).toBeGreaterThan(0);
  });
});
