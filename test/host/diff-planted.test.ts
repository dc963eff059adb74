/**
 * diff cannot lie, attribute by attribute: a pod that
 * sync carries exactly compares EQUAL (by the model and by complete reads,
 * and an independent complete read agrees); then, one at a time, a
 * difference is planted in the pod (or the guest) in an attribute sync
 * carries or one it does not carry, and diff must say DIFFERENT with a row
 * that names it; taken away again, EQUAL again. Nothing is synced in
 * between: the guest stays as the first sync left it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../helpers/process";
import { expectMirrorVerdict, MirrorPair, notMirrored } from "./complete-helpers";

let m: MirrorPair;
const GW = "10.70.119.193";

beforeAll(async () => {
  m = await MirrorPair.create();
  await m.pod.ip("addr", "add", "10.70.119.194/26", "dev", "eth0");
  await m.pod.ip("addr", "add", "fd00:70::2/64", "dev", "eth0", "nodad");
  await m.pod.ip("route", "add", "default", "via", GW);
  await m.pod.ip("route", "add", "192.0.2.0/24", "via", GW, "table", "100");
  const s = await m.sync();
  expect(s.code, s.stdout + s.stderr).toBe(0);
});

afterAll(async () => {
  await m?.remove();
});

async function sysctl(ns: string, key: string, value?: string): Promise<string> {
  const args = value === undefined ? ["-n", key] : ["-qw", `${key}=${value}`];
  const r = await run("ip", ["netns", "exec", ns, "sysctl", ...args]);
  if (r.code !== 0) throw new Error(`sysctl ${args.join(" ")} in ${ns}: ${r.stderr}`);
  return r.stdout.trim();
}

interface Plant {
  what: string;
  /** Which side gets it. */
  side?: "pod" | "guest";
  plant: string[][];
  undo: string[][];
  /** A "not mirrored" row (diff --json's `what` and `field`) that names it. */
  row: RegExp;
}

const ip = (...a: string[]) => a;
const PLANTS: Plant[] = [
  {
    what: "link txqueuelen",
    plant: [ip("link", "set", "eth0", "txqueuelen", "500")],
    undo: [ip("link", "set", "eth0", "txqueuelen", "1000")],
    row: /^link eth0 txqlen 500/,
  },
  {
    what: "link promisc",
    plant: [ip("link", "set", "eth0", "promisc", "on")],
    undo: [ip("link", "set", "eth0", "promisc", "off")],
    row: /^link eth0 (flags|promiscuity) /,
  },
  {
    what: "link allmulticast",
    plant: [ip("link", "set", "eth0", "allmulticast", "on")],
    undo: [ip("link", "set", "eth0", "allmulticast", "off")],
    row: /^link eth0 (flags|allmulti) /,
  },
  {
    what: "link group",
    plant: [ip("link", "set", "eth0", "group", "7")],
    undo: [ip("link", "set", "eth0", "group", "default")],
    row: /^link eth0 group 7/,
  },
  {
    what: "link alias",
    plant: [ip("link", "set", "eth0", "alias", "pod-nic")],
    undo: [ip("link", "set", "eth0", "alias", "")],
    row: /^link eth0 ifalias pod-nic/,
  },
  {
    what: "link mtu (carried)",
    plant: [ip("link", "set", "eth0", "mtu", "1400")],
    undo: [ip("link", "set", "eth0", "mtu", "1500")],
    row: /^link eth0 mtu 1400/,
  },
  {
    what: "address broadcast",
    plant: [ip("addr", "add", "10.71.0.1/24", "broadcast", "10.71.0.255", "dev", "eth0")],
    undo: [ip("addr", "del", "10.71.0.1/24", "dev", "eth0")],
    row: /^address 10\.71\.0\.1\/24 on eth0 pod only .*broadcast 10\.71\.0\.255/,
  },
  {
    what: "address noprefixroute",
    plant: [ip("addr", "add", "10.72.0.1/24", "dev", "eth0", "noprefixroute")],
    undo: [ip("addr", "del", "10.72.0.1/24", "dev", "eth0")],
    row: /^address 10\.72\.0\.1\/24 on eth0 pod only .*noprefixroute/,
  },
  {
    what: "address metric",
    plant: [ip("addr", "add", "10.73.0.1/24", "dev", "eth0", "metric", "50")],
    undo: [ip("addr", "del", "10.73.0.1/24", "dev", "eth0")],
    row: /^address 10\.73\.0\.1\/24 on eth0 pod only .*metric 50/,
  },
  {
    what: "address peer",
    plant: [ip("addr", "add", "10.74.0.1", "peer", "10.74.0.2/32", "dev", "eth0")],
    undo: [ip("addr", "del", "10.74.0.1", "peer", "10.74.0.2/32", "dev", "eth0")],
    row: /^address 10\.74\.0\.1\/32 peer 10\.74\.0\.2 on eth0 pod only/,
  },
  {
    what: "address deprecated",
    plant: [
      ip(
        "addr",
        "add",
        "fd00:75::1/64",
        "dev",
        "eth0",
        "nodad",
        "preferred_lft",
        "0",
        "valid_lft",
        "3600",
      ),
    ],
    // The kernel keeps the prefix route of an address with a lifetime once it is gone.
    undo: [
      ip("addr", "del", "fd00:75::1/64", "dev", "eth0"),
      ip("-6", "route", "flush", "fd00:75::/64"),
    ],
    row: /^address fd00:75::1\/64 on eth0 pod only .*preferred_lft 0/,
  },
  {
    what: "route advmss",
    plant: [ip("route", "add", "10.80.0.0/16", "via", GW, "advmss", "1300")],
    undo: [ip("route", "del", "10.80.0.0/16")],
    row: /^route 10\.80\.0\.0\/16 table main pod only .*metrics\.advmss 1300/,
  },
  {
    what: "route mtu lock",
    plant: [ip("route", "add", "10.81.0.0/16", "via", GW, "mtu", "lock", "1400")],
    undo: [ip("route", "del", "10.81.0.0/16")],
    row: /^route 10\.81\.0\.0\/16 table main pod only .*locks mtu/,
  },
  {
    what: "route quickack",
    plant: [ip("route", "add", "10.82.0.0/16", "via", GW, "quickack", "1")],
    undo: [ip("route", "del", "10.82.0.0/16")],
    row: /^route 10\.82\.0\.0\/16 table main pod only .*metrics\.quickack 1/,
  },
  {
    what: "route tos",
    plant: [ip("route", "add", "10.83.0.0/16", "via", GW, "tos", "0x08")],
    undo: [ip("route", "del", "10.83.0.0/16", "tos", "0x08")],
    row: /^route 10\.83\.0\.0\/16 tos 0x08 table main pod only/,
  },
  {
    what: "route multipath",
    plant: [
      ip("route", "add", "10.84.0.0/16", "nexthop", "via", GW, "nexthop", "via", "10.70.119.195"),
    ],
    undo: [ip("route", "del", "10.84.0.0/16")],
    row: /^route 10\.84\.0\.0\/16 table main pod only .*nexthops gateway 10\.70\.119\.193/,
  },
  {
    what: "route local in table 100",
    plant: [ip("route", "add", "local", "10.85.0.1", "dev", "eth0", "table", "100")],
    undo: [ip("route", "del", "local", "10.85.0.1", "dev", "eth0", "table", "100")],
    row: /^route local 10\.85\.0\.1 table 100 pod only/,
  },
  {
    what: "route realm",
    plant: [ip("route", "add", "10.86.0.0/16", "via", GW, "realm", "5")],
    undo: [ip("route", "del", "10.86.0.0/16")],
    row: /^route 10\.86\.0\.0\/16 table main pod only .*flow\.to 5/,
  },
  {
    what: "route pref",
    plant: [ip("-6", "route", "add", "fd00:87::/64", "dev", "eth0", "pref", "high")],
    undo: [ip("-6", "route", "del", "fd00:87::/64", "dev", "eth0")],
    row: /^route fd00:87::\/64 \(v6\) metric 1024 table main pod only .*pref high/,
  },
  {
    what: "route in table 100 (carried)",
    plant: [ip("route", "add", "198.51.100.0/24", "via", GW, "table", "100")],
    undo: [ip("route", "del", "198.51.100.0/24", "table", "100")],
    row: /^route 198\.51\.100\.0\/24 table 100 pod only/,
  },
  {
    what: "rule ipproto and dport",
    plant: [ip("rule", "add", "priority", "100", "ipproto", "tcp", "dport", "80", "lookup", "100")],
    undo: [ip("rule", "del", "priority", "100")],
    row: /^rule 100 pod only .*ipproto tcp/,
  },
  {
    what: "rule uidrange",
    plant: [ip("rule", "add", "priority", "101", "uidrange", "100-200", "lookup", "100")],
    undo: [ip("rule", "del", "priority", "101")],
    row: /^rule 101 pod only .*uid_start 100/,
  },
  {
    what: "rule fwmark (carried)",
    plant: [ip("rule", "add", "priority", "102", "fwmark", "0x10", "lookup", "100")],
    undo: [ip("rule", "del", "priority", "102")],
    row: /^rule 102 pod only .*fwmark 0x10/,
  },
  {
    what: "neighbour proxy",
    plant: [ip("neigh", "add", "proxy", "10.70.119.250", "dev", "eth0")],
    undo: [ip("neigh", "del", "proxy", "10.70.119.250", "dev", "eth0")],
    row: /^neighbour proxy 10\.70\.119\.250 dev eth0 pod only/,
  },
  {
    what: "neighbour permanent (carried)",
    plant: [
      ip(
        "neigh",
        "add",
        "10.70.119.251",
        "lladdr",
        "02:00:00:00:00:99",
        "dev",
        "eth0",
        "nud",
        "permanent",
      ),
    ],
    undo: [ip("neigh", "del", "10.70.119.251", "dev", "eth0")],
    row: /^neighbour 10\.70\.119\.251 dev eth0 pod only .*PERMANENT/,
  },
  {
    what: "nexthop object",
    plant: [ip("nexthop", "add", "id", "7", "via", GW, "dev", "eth0")],
    undo: [ip("nexthop", "del", "id", "7")],
    row: /^nexthop id 7 pod only .*gateway 10\.70\.119\.193/,
  },
  {
    what: "a route in the guest only",
    side: "guest",
    plant: [ip("route", "add", "10.90.0.0/16", "via", GW, "dev", "eth0", "table", "300")],
    undo: [ip("route", "del", "10.90.0.0/16", "table", "300")],
    row: /^route 10\.90\.0\.0\/16 table 300 guest only/,
  },
];

const SYSCTLS: { key: string; side: "pod" | "guest"; value: string; row: RegExp }[] = [
  {
    key: "net.ipv4.tcp_syn_retries",
    side: "pod",
    value: "3",
    row: /^sysctl net\.ipv4\.tcp_syn_retries value 3/,
  },
  {
    key: "net.ipv4.conf.eth0.rp_filter",
    side: "pod",
    value: "2",
    row: /^sysctl net\.ipv4\.conf\.eth0\.rp_filter value 2/,
  },
  {
    key: "net.ipv4.tcp_syn_retries",
    side: "guest",
    value: "4",
    row: /^sysctl net\.ipv4\.tcp_syn_retries value \d+ 4$/,
  },
];

/** diff --json says DIFFERENT, and one "not mirrored" row reads `WHAT FIELD POD GUEST` as `row` wants. */
async function expectPlanted(row: RegExp, what: string): Promise<void> {
  const r = await m.diff("--json");
  const rows = notMirrored(r).map((f) => `${f.what} ${f.field} ${f.pod} ${f.guest}`);
  expect(r.code, `${what}\n${rows.join("\n")}`).toBe(1);
  expect(
    rows.some((x) => row.test(x)),
    `${what}: ${row}\n${rows.join("\n")}`,
  ).toBe(true);
}

describe("a difference planted in any attribute makes diff DIFFERENT", () => {
  it("the synced pod: EQUAL by diff and by an independent complete read", async () => {
    await expectMirrorVerdict(await m.diff(), m.pod.name, m.guest.ns.name);
    expect((await m.diff()).code).toBe(0);
  });

  it("links, addresses, routes, rules, neighbours, nexthop objects, one at a time", async () => {
    for (const p of PLANTS) {
      const ns = p.side === "guest" ? m.guest.ns : m.pod;
      for (const c of p.plant) await ns.ip(...c);
      await expectPlanted(p.row, p.what);
      for (const c of p.undo) await ns.ip(...c);
    }
    const back = await m.diff();
    expect(back.code, back.stdout).toBe(0);
  }, 600_000);

  it("sysctls, in the pod and in the guest", async () => {
    for (const s of SYSCTLS) {
      const ns = s.side === "guest" ? m.guest.ns.name : m.pod.name;
      const was = await sysctl(ns, s.key);
      await sysctl(ns, s.key, s.value);
      try {
        await expectPlanted(s.row, `${s.side} ${s.key}`);
      } finally {
        await sysctl(ns, s.key, was);
      }
    }
    expect((await m.diff()).code).toBe(0);
  }, 300_000);
});
