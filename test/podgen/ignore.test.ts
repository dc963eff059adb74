/**
 * One test per entry of the ignore list (ignore.ts): two real netns that
 * carry the same configuration still differ in the ignored field (or the
 * kernel makes the ignored object by itself), and the comparison does not
 * report it. A last test checks every entry has its test here.
 */
import { afterAll, describe, expect, it } from "vitest";
import { run } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import { ipOk } from "./build";
import { compareReads } from "./compare";
import { IGNORED, isKernelLinkLocal, LEARNED_STATES } from "./ignore";
import { explained, lookup } from "./lookups";
import { normalise } from "./normalise";
import { type Json, type NetnsRead, readNetns } from "./read";
import { Scratch } from "./scratch";

const scratch = new Scratch();
afterAll(() => scratch.removeAll());

const tested: string[] = [];
const entry = (id: keyof typeof IGNORED) => {
  tested.push(id);
  return `${id}: ${IGNORED[id].what}`;
};

const MAC = "02:5a:00:00:00:01";
const link = (r: NetnsRead, name = "eth0") => r.links.find((l) => l.ifname === name) as Json;
const addrs = (r: NetnsRead, name = "eth0") =>
  (r.addresses.find((l) => l.ifname === name)?.addr_info ?? []) as Json[];
const fieldsOf = (r: NetnsRead, key: string) =>
  normalise(r).objects.find((o) => o.key === key)?.fields;

describe.concurrent("the ignore list, entry by entry", () => {
  it(entry("linkIndex"), async () => {
    const a = await scratch.withVeth(MAC);
    const b = await scratch.netns();
    const bPeer = await scratch.netns();
    // B made another pair first: its NIC and the NIC's peer get other indexes.
    await ipOk("-n", b, "link", "add", "x0", "type", "veth", "peer", "name", "x1", "netns", bPeer);
    await ipOk(
      "-n",
      b,
      "link",
      "add",
      "eth0",
      "address",
      MAC,
      "type",
      "veth",
      "peer",
      "name",
      "p0",
      "netns",
      bPeer,
    );
    await ipOk("-n", bPeer, "link", "set", "p0", "up");
    await ipOk("-n", b, "link", "set", "eth0", "up");
    // As withVeth does for A: B's carrier (operstate UP) comes a moment later (linkwatch).
    // Compared before it, the two differ in operstate, which is no ignored field.
    await waitFor(
      async () =>
        (
          JSON.parse(await ipOk("-n", b, "-j", "link", "show", "eth0")) as { operstate: string }[]
        )[0]?.operstate === "UP",
      { what: "eth0 in B with carrier" },
    );
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b)];
    expect(link(ra).ifindex).not.toEqual(link(rb).ifindex);
    expect(link(ra).link_index).not.toEqual(link(rb).link_index);
    expect(fieldsOf(ra, `mac ${MAC}`)).toEqual(fieldsOf(rb, `mac ${MAC}`));
  });

  it(entry("linkDevice"), async () => {
    const { ra, rb } = await vethAndTap();
    expect(link(ra).linkinfo).not.toEqual(link(rb).linkinfo);
    const kept = [...(fieldsOf(rb, `mac ${MAC}`)?.keys() ?? [])];
    expect(
      kept.filter((k) => IGNORED.linkDevice.fields.some((f) => k === f || k.startsWith(`${f}.`))),
    ).toEqual([]);
  });

  it(entry("linkQdisc"), async () => {
    const { ra, rb } = await vethAndTap();
    expect([link(ra).qdisc, link(rb).qdisc]).toEqual(["noqueue", "pfifo_fast"]);
    expect(fieldsOf(rb, `mac ${MAC}`)?.has("qdisc")).toBe(false);
  });

  it(entry("addressLifetimes"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    const add = (ns: string) =>
      ipOk(
        "-n",
        ns,
        "address",
        "add",
        "10.90.0.2/24",
        "dev",
        "eth0",
        "valid_lft",
        "1000",
        "preferred_lft",
        "500",
      );
    await add(a.ns);
    await waitFor(async () => Number((await eth0Addrs(a.ns))[0]?.valid_life_time) < 999, {
      what: "two seconds to pass",
    });
    await add(b.ns);
    // Both read at once: the two seconds between the adds stay between the numbers.
    const [ra, rb] = await Promise.all([readNetns(a.ns), readNetns(b.ns)]);
    expect(addrs(ra)[0]?.valid_life_time).not.toEqual(addrs(rb)[0]?.valid_life_time);
    expect(compareReads(ra, rb)).toEqual([]);
  });

  it(entry("addressTentative"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    // Ten probes a second apart: DAD outlasts the reads even on a busy machine.
    await ipOk("netns", "exec", a.ns, "sysctl", "-qw", "net.ipv6.conf.eth0.dad_transmits=10");
    await ipOk("-n", a.ns, "-6", "address", "add", "fd5a::2/64", "dev", "eth0");
    await ipOk("-n", b.ns, "-6", "address", "add", "fd5a::2/64", "dev", "eth0", "nodad");
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b.ns)];
    expect(addrs(ra).find((x) => x.local === "fd5a::2")?.tentative).toBe(true);
    expect(addrs(rb).find((x) => x.local === "fd5a::2")?.tentative).toBeUndefined();
    // (Its table local route comes with the end of DAD: the builder waits for that.)
    expect(compareReads(ra, rb).filter((d) => d.kind === "address")).toEqual([]);
  });

  it(entry("addressGuestNodad"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    await ipOk("-n", a.ns, "-6", "address", "add", "fd5b::2/64", "dev", "eth0");
    await ipOk("-n", b.ns, "-6", "address", "add", "fd5b::2/64", "dev", "eth0", "nodad");
    // As the builder settles a pod: its table local route comes once DAD is over.
    await waitFor(async () => !(await eth0Addrs(a.ns)).some((x) => x.tentative), {
      what: "DAD",
    });
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b.ns)];
    const about = (x: NetnsRead, y: NetnsRead) =>
      compareReads(x, y).filter((d) => d.what.includes("fd5b::2"));
    expect(about(ra, rb)).toEqual([]);
    // The other way round (the pod's nodad missing in the guest) is a difference.
    expect(about(rb, ra).map((d) => d.field)).toEqual(["nodad"]);
  });

  it(`${entry("addressKernelLinkLocal")}; ${entry("routeKernelLinkLocal")}`, async () => {
    // A pod's veth that came up with one MAC and was given another keeps the first one's link-local.
    const a = await scratch.withVeth("02:5a:00:00:00:77");
    await linkLocal(a.ns);
    await ipOk("-n", a.ns, "link", "set", "eth0", "address", MAC);
    const b = await scratch.withVeth(MAC);
    await linkLocal(b.ns);
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b.ns)];
    const ll = (r: NetnsRead) =>
      addrs(r)
        .filter((x) => String(x.local).startsWith("fe80:"))
        .map((x) => x.local);
    expect(ll(ra)).toEqual(["fe80::5a:ff:fe00:77"]);
    expect(ll(rb)).toEqual(["fe80::5a:ff:fe00:1"]);
    const localRoute = (r: NetnsRead) =>
      r.routes
        .filter((x) => x.table === "local" && String(x.dst).startsWith("fe80:"))
        .map((x) => x.dst);
    expect(localRoute(ra)).not.toEqual(localRoute(rb));
    expect(compareReads(ra, rb)).toEqual([]);
    // A link-local the pod adds itself is compared.
    expect(isKernelLinkLocal("fe80::99")).toBe(false);
    await ipOk("-n", a.ns, "-6", "address", "add", "fe80::99/64", "dev", "eth0", "nodad");
    const d = compareReads(await readNetns(a.ns), rb).map((x) => x.text);
    expect(d.some((t) => t.startsWith("pod only: address fe80::99/64"))).toBe(true);
  });

  it(entry("routeExpires"), async () => {
    const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
    const add = (ns: string) =>
      ipOk("-n", ns, "-6", "route", "add", "fd70::/64", "dev", "eth0", "expires", "600");
    const expires = (r: NetnsRead) => r.routes.find((x) => x.dst === "fd70::/64")?.expires;
    await add(a.ns);
    await waitFor(
      async () =>
        Number(
          expires({ routes: await json(a.ns, "-6", "route", "show", "fd70::/64") } as NetnsRead),
        ) < 599,
      {
        what: "two seconds to pass",
      },
    );
    await add(b.ns);
    // Both read at once: the two seconds between the adds stay between the numbers.
    const [ra, rb] = await Promise.all([readNetns(a.ns), readNetns(b.ns)]);
    expect(expires(ra)).not.toEqual(expires(rb));
    expect(compareReads(ra, rb)).toEqual([]);
  });

  it(entry("neighbourLearned"), async () => {
    // The kernel learns the peer's MAC from a datagram sent to it, in A only.
    await entryMadeInAOnly({ subnet: "10.91.0", arp: true, what: "the peer's MAC learned" }, (n) =>
      ((n.state ?? []) as string[]).some((x) => x !== "INCOMPLETE" && LEARNED_STATES.has(x)),
    );
  });

  it(entry("neighbourNoarpLink"), async () => {
    // On a NOARP link the kernel resolves the datagram's destination as eth0's own MAC.
    await entryMadeInAOnly(
      { subnet: "10.92.0", arp: false, what: "a NOARP entry holding eth0's own MAC" },
      (n) => n.lladdr === MAC && ((n.state ?? []) as string[]).includes("NOARP"),
    );
  });

  it(entry("neighbourKernelMulticast"), async () => {
    const a = await scratch.withVeth(MAC);
    // No neighbour command: the kernel adds them as it joins groups and sends its reports.
    await waitFor(
      async () => (await json(a.ns, "-6", "neigh", "show", "nud", "all", "dev", "eth0")).length > 0,
      {
        what: "the kernel's multicast neighbours",
      },
    );
    const r = await readNetns(a.ns);
    const multicast = { r, m: r.neighbours.filter((n) => String(n.dst).startsWith("ff02:")) };
    expect(multicast.m.length).toBeGreaterThan(0);
    expect(multicast.m.every((n) => (n.state as string[]).includes("NOARP"))).toBe(true);
    expect(normalise(multicast.r).objects.filter((o) => o.kind === "neighbour")).toEqual([]);
  });

  it(entry("lookupKernelLinkLocalSource"), async () => {
    const a = await scratch.withVeth(MAC);
    // B's link came up with another MAC and got MAC later: its kernel link-local is another.
    const b = await scratch.withVeth("02:5a:00:00:00:77");
    await ipOk("-n", b.ns, "link", "set", "eth0", "address", MAC);
    const probe = { args: ["-6", "route", "get", "fe80::1", "oif", "eth0"] };
    const src = async (ns: string) => {
      const [r] = await json(ns, ...probe.args);
      return String(r?.prefsrc);
    };
    const [sa, sb] = await waitFor(
      async () => {
        const both = [await src(a.ns), await src(b.ns)];
        return both.every((s) => isKernelLinkLocal(s)) && both;
      },
      { what: "both sides answering with their kernel link-local", timeoutMs: 20_000 },
    );
    expect(sa).not.toBe(sb);
    expect(await lookup(a.ns, probe)).toBe(await lookup(b.ns, probe));
  });

  it(`${entry("linkCarrier")}; ${entry("routeCarrier")}; ${entry("routeCarrierOnly")}; ${entry("lookupCarrierOnly")}`, async () => {
    // A: a bridge without ports (no carrier); B: a veth whose peer is up. Configured alike.
    const a = await scratch.netns();
    const b = await scratch.netns();
    const bPeer = await scratch.netns();
    const mac = "02:5a:00:00:00:c1";
    await ipOk("-n", a, "link", "add", "c0", "address", mac, "type", "bridge");
    await ipOk(
      "-n",
      b,
      "link",
      "add",
      "c0",
      "address",
      mac,
      "type",
      "veth",
      "peer",
      "name",
      "p0",
      "netns",
      bPeer,
    );
    await ipOk("-n", bPeer, "link", "set", "p0", "up");
    for (const ns of [a, b]) {
      await ipOk("-n", ns, "addr", "add", "10.77.0.2/24", "dev", "c0");
      await ipOk("-n", ns, "-6", "addr", "add", "fd00:77::2/64", "dev", "c0");
      await ipOk("-n", ns, "link", "set", "c0", "up");
      await ipOk("-n", ns, "route", "add", "10.78.0.0/16", "via", "10.77.0.1", "dev", "c0");
    }
    const local6 = async (ns: string) =>
      (await json(ns, "-6", "route", "show", "table", "local", "dev", "c0")).map(
        (r) => `${String(r.type)} ${String(r.dst)}`,
      );
    await waitFor(async () => (await local6(b)).includes("local fd00:77::2"), {
      what: "B's local route of fd00:77::2 (DAD over)",
    });
    const [ra, rb] = [await readNetns(a), await readNetns(b)];
    expect(link(ra, "c0").flags).toContain("NO-CARRIER");
    expect(link(rb, "c0").flags).toContain("LOWER_UP");
    expect(link(ra, "c0").operstate).not.toBe(link(rb, "c0").operstate);
    const [route] = await json(a, "route", "show", "10.78.0.0/16");
    expect(route?.flags).toContain("linkdown");
    expect(await local6(a)).not.toContain("local fd00:77::2");
    // lookupCarrierOnly: B answers a multicast lookup from its ff00::/8, A has none.
    const probe = { args: ["-6", "route", "get", "ff0e::5", "iif", "c0"] };
    const [la, lb] = [await lookup(a, probe), await lookup(b, probe)];
    expect(lb).toMatch(/^type multicast dev c0 table local/);
    expect(la).not.toBe(lb);
    const carrier = { pod: new Map([["c0", false]]), guest: new Map([["c0", true]]) };
    expect(explained(probe, la, lb, carrier)).toBe("lookupCarrierOnly");
    // The kernel's own link-local and fe80::/64 of B are other entries' (or the agent's).
    const differences = compareReads(ra, rb).filter((d) => !/fe80::\/64/.test(d.what));
    expect(differences).toEqual([]);
  });

  it(entry("lookupLinkLocalAnyLink"), async () => {
    // Two links alike in A and B, brought up in the other order.
    const [a, b, peer] = [await scratch.netns(), await scratch.netns(), await scratch.netns()];
    const macs = { x0: "02:5a:00:00:00:d1", y0: "02:5a:00:00:00:d2" };
    for (const [ns, order] of [
      [a, ["x0", "y0"]],
      [b, ["y0", "x0"]],
    ] as const) {
      for (const name of order) {
        const p = `${ns === a ? "a" : "b"}${name}`;
        await ipOk(
          "-n",
          ns,
          "link",
          "add",
          name,
          "address",
          macs[name],
          "type",
          "veth",
          "peer",
          "name",
          p,
          "netns",
          peer,
        );
        await ipOk("-n", peer, "link", "set", p, "up");
        await ipOk("-n", ns, "link", "set", name, "up");
        await waitFor(
          async () => (await json(ns, "-6", "route", "show", "fe80::/64", "dev", name)).length > 0,
          { what: `fe80::/64 on ${name}` },
        );
      }
    }
    const probe = { args: ["-6", "route", "get", "fe80::1"] };
    const [la, lb] = [await lookup(a, probe), await lookup(b, probe)];
    expect([la, lb].map((x) => /dev (\S+)/.exec(x)?.[1])).toEqual(["x0", "y0"]);
    const none = { pod: new Map(), guest: new Map() };
    expect(explained(probe, la, lb, none)).toBe("lookupLinkLocalAnyLink");
    // With the interface named, the answer is compared.
    const oif = { args: ["-6", "route", "get", "fe80::1", "oif", "x0"] };
    expect(explained(oif, la, lb, none)).toBeUndefined();
  });

  it(entry("lookupSourceOtherLink"), async () => {
    // Links alike in A and B, made in another order; z0 has no IPv4 address.
    const [a, b, peer] = [await scratch.netns(), await scratch.netns(), await scratch.netns()];
    const addrs: Record<string, string> = { x0: "10.81.0.2/24", y0: "10.82.0.2/24", z0: "" };
    for (const [ns, order] of [
      [a, ["x0", "y0", "z0"]],
      [b, ["y0", "x0", "z0"]],
    ] as const) {
      for (const name of order) {
        const p = `${ns === a ? "a" : "b"}${name}`;
        await ipOk("-n", ns, "link", "add", name, "type", "veth", "peer", "name", p, "netns", peer);
        await ipOk("-n", peer, "link", "set", p, "up");
        await ipOk("-n", ns, "link", "set", name, "up");
        if (addrs[name]) await ipOk("-n", ns, "addr", "add", addrs[name] as string, "dev", name);
      }
    }
    const probe = { args: ["route", "get", "10.9.9.9", "oif", "z0"] };
    const [la, lb] = [await lookup(a, probe), await lookup(b, probe)];
    expect([la, lb]).toEqual([
      "type unicast dev z0 prefsrc 10.81.0.2",
      "type unicast dev z0 prefsrc 10.82.0.2",
    ]);
    const none = { pod: new Map(), guest: new Map() };
    const families = new Map([
      ["x0", new Set(["inet"])],
      ["y0", new Set(["inet"])],
      ["z0", new Set<string>()],
    ]);
    expect(explained(probe, la, lb, none, families)).toBe("lookupSourceOtherLink");
    // Through a link with an address of its own, the source is compared.
    const x0 = { args: ["route", "get", "10.9.9.9", "oif", "x0"] };
    expect(explained(x0, la, lb, none, families)).toBeUndefined();
  });

  it("every entry of the ignore list has its test above", () => {
    expect(tested.sort()).toEqual(Object.keys(IGNORED).sort());
  });
});

/**
 * Two netns alike (eth0 at SUBNET.2/24, its peer at .1, ARP on or off); a
 * datagram from A to the peer makes the kernel add a neighbour entry that
 * `made` recognises, in A alone; the comparison does not report it.
 */
async function entryMadeInAOnly(
  o: { subnet: string; arp: boolean; what: string },
  made: (n: Json) => boolean,
): Promise<void> {
  const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
  const peerAddr = `${o.subnet}.1`;
  for (const { ns, peer } of [a, b]) {
    if (!o.arp) await ipOk("-n", ns, "link", "set", "eth0", "arp", "off");
    await ipOk("-n", ns, "address", "add", `${o.subnet}.2/24`, "dev", "eth0");
    await ipOk("-n", peer, "address", "add", `${peerAddr}/24`, "dev", "p0");
  }
  const sent = await run("ip", [
    "netns",
    "exec",
    a.ns,
    "bash",
    "-c",
    `echo x >/dev/udp/${peerAddr}/9`,
  ]);
  expect(sent.code, sent.stderr).toBe(0);
  await waitFor(
    async () => {
      const [n] = await json(a.ns, "neigh", "show", "nud", "all", peerAddr, "dev", "eth0");
      return n !== undefined && made(n);
    },
    { what: o.what },
  );
  const ra = await readNetns(a.ns);
  const rb = await readNetns(b.ns);
  expect(rb.neighbours.find((n) => n.dst === peerAddr)).toBeUndefined();
  expect(compareReads(ra, rb)).toEqual([]);
}

const json = async (ns: string, ...args: string[]) =>
  JSON.parse((await ipOk("-n", ns, "-j", ...args)) || "[]") as Json[];

/** eth0's addresses by one `ip -j` (the polls need no complete read). */
async function eth0Addrs(ns: string): Promise<Json[]> {
  const [l] = JSON.parse(await ipOk("-n", ns, "-j", "address", "show", "dev", "eth0")) as Json[];
  return (l?.addr_info ?? []) as Json[];
}

/** Waits for the kernel's link-local on eth0 to be there and past DAD (then its local route is too). */
function linkLocal(ns: string) {
  return waitFor(
    async () =>
      (await eth0Addrs(ns)).some((x) => String(x.local).startsWith("fe80:") && !x.tentative),
    {
      what: "the kernel's link-local",
    },
  );
}

/** A: a veth with MAC; B: a tap device with the same MAC (another device type). */
async function vethAndTap(): Promise<{ ra: NetnsRead; rb: NetnsRead }> {
  const a = await scratch.withVeth(MAC);
  const b = await scratch.netns();
  await ipOk("-n", b, "tuntap", "add", "dev", "eth0", "mode", "tap");
  await ipOk("-n", b, "link", "set", "eth0", "address", MAC, "up");
  return { ra: await readNetns(a.ns), rb: await readNetns(b) };
}
