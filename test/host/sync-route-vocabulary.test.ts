/**
 * Routes beyond a plain table's, each in a pod of its own (two veth NICs whose
 * peers live in a third netns), mirrored with `netagentctl sync` into an
 * agent's guest netns: a multipath default route, a route with a tos beside
 * a `prohibit default`, TCP metrics (advmss, quickack, a locked MTU),
 * nexthop objects and a group, a `local` route in a user table, two
 * routes that `ip route append` made with one key, and the rest (via
 * inet6, pref, realms, IPv6 `from`, expires, every other metric, broadcast,
 * anycast and multicast routes in a user table). Every check is an
 * independent read: `ip -d -j route show table all`, `ip -d -j nexthop
 * show` (and `-6` for the family of each object) and `ip -j route get`,
 * the same in the pod and in the guest.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type CtlResult, ctl, Guest, Netns, randomMac, waitFor } from "./helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

const NICS = ["eth0", "eth1"];

interface Setup {
  pod: Netns;
  guest: Guest;
}

/** A pod with eth0 (10.70.119.194/26, fd00::2/64) and eth1 (10.80.0.2/24), then `commands`. */
async function setUp(commands: string[][]): Promise<Setup> {
  const pod = await Netns.create("r22p");
  cleanups.push(() => pod.remove());
  const peers = await Netns.create("r22x");
  cleanups.push(() => peers.remove());
  const macs = [randomMac(), randomMac()];
  await pod.veth("eth0", "p0", { mac: macs[0], peerNs: peers });
  await pod.veth("eth1", "p1", { mac: macs[1], peerNs: peers });
  await pod.ip("addr", "add", "10.70.119.194/26", "dev", "eth0");
  await pod.ip("addr", "add", "fd00::2/64", "dev", "eth0", "nodad");
  await pod.ip("addr", "add", "10.80.0.2/24", "dev", "eth1");
  for (const c of commands) await pod.ip(...c);
  await settled(pod);
  const guest = await Guest.create();
  cleanups.push(() => guest.remove());
  // The guest's NICs have their peers outside the guest (Guest.addNic): sync's own
  // complete check would otherwise find the guest holding two links the pod lacks.
  await guest.addNic("gst0", macs[0] as string);
  await guest.addNic("gst1", macs[1] as string);
  return { pod, guest };
}

type Json = Record<string, unknown>;

/**
 * Every route of every table that concerns the pod's NICs (or no link), one
 * JSON text each, sorted; `expires` (a countdown) as present or not.
 */
async function routeView(ns: Netns): Promise<string[]> {
  const rows = await ns.json<Json[]>("route", "show", "table", "all");
  const onNic = (r: Json) => {
    const devs = [r.dev, ...((r.nexthops as Json[] | undefined) ?? []).map((h) => h.dev)];
    if (devs.some((d) => typeof d === "string" && NICS.includes(d))) return true;
    // Routes through no link: IPv4 shows none, IPv6 files them under lo.
    return r.dev === undefined || (r.dev === "lo" && r.type !== "unicast" && r.type !== "local");
  };
  return rows
    .filter(onNic)
    .map((r) => JSON.stringify(r, (k, v) => (k === "expires" ? "(set)" : v)))
    .sort();
}

/** Nexthop objects as `ip -d -j nexthop show` prints them, with the family each has. */
async function nexthopView(ns: Netns): Promise<string[]> {
  const all = await ns.json<Json[]>("nexthop", "show");
  const v6 = new Set((await ns.json<Json[]>("-6", "nexthop", "show")).map((n) => n.id));
  return all.map((n) => JSON.stringify({ v6: v6.has(n.id), ...n })).sort();
}

/** Both NICs have their kernel link-local address and nothing is tentative (DAD done): its routes are in. */
async function settled(ns: Netns): Promise<void> {
  await waitFor(
    async () => {
      const links = await ns.json<{ ifname: string; addr_info: Json[] }[]>("addr", "show");
      return NICS.every((name) => {
        const addrs = links.find((l) => l.ifname === name)?.addr_info ?? [];
        const ll = addrs.some((a) => String(a.local).startsWith("fe80:"));
        return ll && !addrs.some((a) => a.tentative === true);
      });
    },
    { what: `the link-local addresses in ${ns.name}` },
  );
}

/** `ip -j route get PROBE`: the decision, or the kernel's refusal (a prohibit route: EACCES). */
async function routeGet(ns: Netns, probe: string[]): Promise<unknown> {
  try {
    const [r] = await ns.json<Json[]>("route", "get", ...probe);
    return r;
  } catch (err) {
    return { refused: (err as Error).message.replace(/^ip -n \S+ /, "") };
  }
}

function sync({ guest, pod }: Setup): Promise<CtlResult> {
  return ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
}

async function expectMirrored(s: Setup, probes: string[][] = []): Promise<void> {
  const r = await sync(s);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  await settled(s.guest.ns);
  expect(await routeView(s.guest.ns)).toEqual(await routeView(s.pod));
  expect(await nexthopView(s.guest.ns)).toEqual(await nexthopView(s.pod));
  for (const p of probes) {
    expect(await routeGet(s.guest.ns, p), `route get ${p.join(" ")}`).toEqual(
      await routeGet(s.pod, p),
    );
  }
}

describe("sync carries the route vocabulary", () => {
  it("a multipath default route via three nexthops stays multipath", async () => {
    const s = await setUp([
      ["route", "add", "default", "nexthop", "via", "10.70.119.193", "dev", "eth0", "weight", "1"]
        .concat(["nexthop", "via", "10.70.119.195", "dev", "eth0", "weight", "3"])
        .concat(["nexthop", "via", "10.80.0.1", "dev", "eth1", "onlink"]),
    ]);
    await expectMirrored(s);
    const [d] = (await s.guest.ns.json<Json[]>("route", "show", "default")) as Json[];
    expect(
      ((d?.nexthops as Json[] | undefined) ?? []).map((h) => [h.gateway, h.dev, h.weight]),
    ).toEqual([
      ["10.70.119.193", "eth0", 1],
      ["10.70.119.195", "eth0", 3],
      ["10.80.0.1", "eth1", 1],
    ]);
  });

  it("a route's tos stays: traffic the pod prohibits is prohibited in the guest", async () => {
    const s = await setUp([
      ["route", "add", "prohibit", "default"],
      ["route", "add", "100.64.0.0/12", "tos", "0x04", "via", "10.70.119.193", "dev", "eth0"],
    ]);
    await expectMirrored(s, [["100.64.1.1"], ["100.64.1.1", "tos", "0x04"]]);
    // The pod prohibits 100.64.1.1 but for tos 0x04; so does the guest.
    expect(await routeGet(s.guest.ns, ["100.64.1.1"])).toEqual({
      refused: expect.stringContaining("Permission denied"),
    });
    expect(await routeGet(s.guest.ns, ["100.64.1.1", "tos", "0x04"])).toMatchObject({
      dev: "eth0",
      gateway: "10.70.119.193",
    });
  });

  it("TCP metrics stay: advmss, quickack, a locked MTU", async () => {
    const s = await setUp([
      ["route", "add", "10.9.0.0/16", "via", "10.70.119.193", "dev", "eth0"].concat([
        "advmss",
        "1200",
        "quickack",
        "1",
        "mtu",
        "lock",
        "1400",
      ]),
    ]);
    await expectMirrored(s);
    const text = await s.guest.ns.ip("route", "show", "10.9.0.0/16");
    expect(text).toContain("mtu lock 1400");
  });

  it("nexthop objects and a group stay, and the route that uses the group", async () => {
    const s = await setUp([
      ["nexthop", "add", "id", "5", "via", "10.70.119.193", "dev", "eth0"],
      ["nexthop", "add", "id", "6", "via", "10.80.0.1", "dev", "eth1"],
      ["-6", "nexthop", "add", "id", "9", "via", "fd00::1", "dev", "eth0"],
      ["nexthop", "add", "id", "7", "group", "5,2/6"],
      ["route", "add", "10.11.0.0/16", "nhid", "7"],
    ]);
    await expectMirrored(s, [["10.11.0.1"]]);
  });
});

describe("sync carries the route vocabulary: nexthops reached by a route, local and appended routes, the rest", () => {
  it("a nexthop object whose gateway only a route of the pod reaches (not an address's prefix) is made after that route", async () => {
    const s = await setUp([
      ["route", "add", "10.81.0.0/24", "dev", "eth1", "scope", "link"],
      ["nexthop", "add", "id", "5", "via", "10.81.0.1", "dev", "eth1"],
      ["nexthop", "add", "id", "6", "group", "5"],
      ["route", "add", "10.20.0.0/16", "nhid", "6"],
    ]);
    await expectMirrored(s, [["10.20.0.1"]]);
  });

  it("a local route in a user table stays", async () => {
    const s = await setUp([
      ["route", "add", "local", "10.12.0.0/16", "dev", "eth0", "table", "200"],
    ]);
    await expectMirrored(s);
  });

  it("two routes `ip route append` made (same table, destination, metric, device) are carried, not refused", async () => {
    const s = await setUp([
      ["route", "add", "10.13.0.0/16", "via", "10.70.119.193", "dev", "eth0", "metric", "5"],
      ["route", "append", "10.13.0.0/16", "via", "10.70.119.195", "dev", "eth0", "metric", "5"],
    ]);
    await expectMirrored(s);
  });

  it("the rest of the vocabulary stays: via inet6, pref, realms, IPv6 from, expires, every metric, broadcast/anycast/multicast in a user table", async () => {
    const gw = ["via", "10.70.119.193", "dev", "eth0"];
    const gw6 = ["via", "fd00::1", "dev", "eth0"];
    const s = await setUp([
      ["route", "add", "10.14.0.0/16", "via", "inet6", "fd00::1", "dev", "eth0"],
      ["-6", "route", "add", "2001:db8:5::/48", ...gw6, "pref", "high"],
      ["route", "add", "10.15.0.0/16", ...gw, "realms", "3/7"],
      ["-6", "route", "add", "2001:db8:6::/48", "from", "fd00:9::/64", ...gw6],
      ["-6", "route", "add", "2001:db8:7::/48", ...gw6, "expires", "600"],
      ["route", "add", "10.19.0.0/16", ...gw, "window", "20000", "rtt", "100ms"]
        .concat(["rttvar", "50ms", "ssthresh", "10", "cwnd", "10", "initcwnd", "12"])
        .concat(["initrwnd", "20", "hoplimit", "9", "reordering", "5", "features", "ecn"])
        .concat(["congctl", "lock", "cubic", "fastopen_no_cookie", "1", "advmss", "lock", "1300"]),
      ["route", "add", "broadcast", "10.16.0.255", "dev", "eth0", "table", "100"],
      ["route", "add", "multicast", "239.0.0.0/8", "dev", "eth0", "table", "100"],
      ["-6", "route", "add", "anycast", "2001:db8:8::/64", "dev", "eth0", "table", "100"],
      ["-6", "route", "add", "multicast", "ff3e::/16", "dev", "eth1", "table", "100"],
    ]);
    await expectMirrored(s, [
      ["10.14.1.1"],
      ["2001:db8:6::1", "from", "fd00:9::5"],
      ["2001:db8:6::1", "from", "fd00:8::5"],
    ]);
    // Locks are only in the text dump (ip -j leaves them out).
    const text = await s.guest.ns.ip("route", "show", "10.19.0.0/16");
    expect(text).toContain("congctl lock cubic");
    expect(text).toContain("advmss lock 1300");
    expect(text).toBe(await s.pod.ip("route", "show", "10.19.0.0/16"));
  });
});

describe("sync carries what ip's name caches would mix up in one batch", () => {
  it("protocols by name and by number, in turn, stay each their own: routes, nexthop objects, rules", async () => {
    // iproute2 6.1 remembers the last protocol it looked up by name and,
    // after a number, answers that name with the number: `proto static`,
    // `proto 200`, `proto static` in one batch made the third 200, and so
    // did every later `static` the agent's resident ip process was given.
    const gw = ["via", "10.70.119.193", "dev", "eth0"];
    const s = await setUp([
      ["route", "add", "10.21.0.0/16", ...gw, "proto", "static"],
      ["route", "add", "10.22.0.0/16", ...gw, "table", "100", "proto", "200"],
      ["route", "add", "10.23.0.0/16", ...gw, "table", "200", "proto", "static"],
      ["nexthop", "add", "id", "5", ...gw, "proto", "static"],
      ["nexthop", "add", "id", "6", ...gw, "proto", "77"],
      ["nexthop", "add", "id", "7", ...gw, "proto", "static"],
      ["rule", "add", "pref", "100", "from", "10.31.0.0/16", "protocol", "static", "table", "100"],
      ["rule", "add", "pref", "101", "from", "10.32.0.0/16", "protocol", "77", "table", "100"],
      ["rule", "add", "pref", "102", "from", "10.33.0.0/16", "protocol", "static", "table", "100"],
    ]);
    await expectMirrored(s);
    const rules = (ns: Netns) => ns.json<Json[]>("rule", "show");
    expect(await rules(s.guest.ns)).toEqual(await rules(s.pod));
  });

  it("address scopes by name and by number in turn (host, 100, host) stay each their own", async () => {
    // The kernel lists a link's addresses by scope, so the turn is across links.
    const s = await setUp([
      ["addr", "add", "10.41.0.2/24", "scope", "host", "dev", "eth0"],
      ["addr", "add", "10.42.0.2/24", "scope", "100", "dev", "eth0"],
      ["addr", "add", "10.43.0.2/24", "scope", "host", "dev", "eth1"],
    ]);
    await expectMirrored(s);
    const scopes = async (ns: Netns) =>
      (await ns.json<{ ifname: string; addr_info: Json[] }[]>("-4", "addr", "show"))
        .filter((l) => NICS.includes(l.ifname))
        .flatMap((l) => l.addr_info.map((a) => `${l.ifname} ${a.local} ${a.scope}`))
        .sort();
    expect(await scopes(s.guest.ns)).toEqual(await scopes(s.pod));
    expect(await scopes(s.pod)).toContain("eth1 10.43.0.2 host");
  });
});

describe("sync carries routes whatever order the pod made them in", () => {
  it("a gateway route the pod added before an anycast route of its table that covers the gateway", async () => {
    // The kernel checks a gateway once, when its route is added, by a lookup
    // in the route's table: there the anycast default (link scope) would be
    // what it finds, and it refuses that ("Nexthop has invalid gateway").
    const s = await setUp([
      [
        "route",
        "add",
        "10.72.0.0/16",
        "via",
        "10.70.119.193",
        "dev",
        "eth0",
        "table",
        "default",
      ].concat(["tos", "0xb8"]),
      ["route", "add", "anycast", "default", "dev", "eth0", "table", "default", "metric", "397"],
      ["route", "add", "multicast", "239.61.93.0/24", "dev", "eth0", "table", "default"],
    ]);
    await expectMirrored(s, [["10.72.1.1", "tos", "0xb8"]]);
  });

  it("an onlink gateway route the pod added after a rule, beside a local default in main", async () => {
    // The kernel checks an onlink gateway's type in the local table. Until a
    // namespace's first IPv4 rule it keeps local and main as one table, where
    // the local default makes every address local: "Nexthop has invalid
    // gateway". The pod added its rule first, so its tables were apart.
    const s = await setUp([
      ["rule", "add", "priority", "28511", "to", "10.18.0.0/16", "prohibit"],
      ["route", "add", "local", "default", "dev", "eth1", "table", "main"],
      ["route", "add", "172.29.50.0/24", "via", "10.169.20.207", "dev", "eth1", "onlink"],
    ]);
    await expectMirrored(s, [["172.29.50.1"]]);
  });
});
