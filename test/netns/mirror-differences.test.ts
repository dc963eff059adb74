/**
 * The kernel makes each difference of src/host/compare/mirror-differences.ts by
 * itself: two namespaces configured alike (a veth `eth0` with the same
 * MAC and address, its peer in a third namespace), read with `ip -d -j`
 * and /proc/sys/net as a complete read reads them, differ in exactly
 * these ways without anyone configuring them. (The entries that need two
 * kernels, sysctlOwnDefault and sysctlOneKernel, or the agent,
 * addressGuestNodad, are shown by the unit cases and the diff tests.)
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  isKernelLinkLocal,
  isMulticast,
  LEARNED_STATES,
} from "../../src/host/compare/mirror-differences";
import { readNetnsSysctlTree } from "../../src/net/sysctl/sysctl-grep";
import { Netns, randomMac } from "../helpers/netns";
import { run } from "../helpers/process";
import { waitFor } from "../helpers/wait";

type Json = Record<string, unknown>;
let a: Netns;
let b: Netns;
let wire: Netns;
const MAC = randomMac();

beforeAll(async () => {
  wire = await Netns.create("n22md-w");
  a = await Netns.create("n22md-a");
  // b gets a link first, so its eth0 has another ifindex.
  b = await Netns.create("n22md-b");
  await b.ip("link", "add", "x0", "type", "veth", "peer", "name", "x1");
  for (const [ns, peer] of [
    [a, "pa"],
    [b, "pb"],
  ] as const) {
    await ns.veth("eth0", peer, { mac: MAC, peerNs: wire });
    await ns.ip("addr", "add", "10.61.0.2/24", "dev", "eth0");
  }
  await wire.ip("addr", "add", "10.61.0.1/24", "dev", "pa");
});

afterAll(async () => {
  for (const ns of [a, b, wire]) await ns?.remove();
});

const link = async (ns: Netns, name = "eth0") =>
  (await ns.json<Json[]>("link", "show", name))[0] as Json;
const addrs = async (ns: Netns) =>
  ((await ns.json<Json[]>("addr", "show", "eth0"))[0]?.addr_info ?? []) as Json[];

describe("what two namespaces configured alike differ in by themselves", () => {
  it("linkIndex: ifindex, and the veth's peer by index in another namespace", async () => {
    const [la, lb] = [await link(a), await link(b)];
    expect(la.ifindex).not.toBe(lb.ifindex);
    expect(la.link_netnsid).toBeTypeOf("number");
    expect(la.link_index).toBeTypeOf("number");
  });

  it("linkDevice and linkQdisc: another device kind has its own kind, queues and qdisc", async () => {
    await a.ip("tuntap", "add", "dev", "tap0", "mode", "tap");
    try {
      const [veth, tap] = [await link(a), await link(a, "tap0")];
      expect((veth.linkinfo as Json).info_kind).toBe("veth");
      expect((tap.linkinfo as Json).info_kind).toBe("tun");
      expect([veth.qdisc, veth.max_mtu, veth.num_tx_queues]).not.toEqual([
        tap.qdisc,
        tap.max_mtu,
        tap.num_tx_queues,
      ]);
    } finally {
      await a.ip("link", "del", "tap0");
    }
  });

  it("linkCarrier and routeCarrier: the far end down takes LOWER_UP and operstate, and routes show linkdown", async () => {
    await a.ip("route", "add", "10.62.0.0/16", "via", "10.61.0.1");
    await wire.ip("link", "set", "pa", "down");
    try {
      await waitFor(async () => (await link(a)).operstate !== "UP", {
        what: "eth0 without carrier",
      });
      const l = await link(a);
      expect(l.flags).toContain("NO-CARRIER");
      expect(l.flags).toContain("UP");
      expect(l.flags).not.toContain("LOWER_UP");
      const [r] = await a.json<Json[]>("route", "show", "10.62.0.0/16");
      expect(r?.flags).toContain("linkdown");
    } finally {
      await wire.ip("link", "set", "pa", "up");
      await a.ip("route", "del", "10.62.0.0/16");
    }
  });

  it("routeCarrierOnly: a link without carrier gets no local route for its tentative IPv6 address, one with carrier gets it and ff00::/8", async () => {
    const mac = randomMac();
    await a.ip("link", "add", "c0", "address", mac, "type", "bridge");
    await b.ip("link", "add", "c0", "address", mac, "type", "veth", "peer", "name", "c1");
    try {
      await b.ip("link", "set", "c1", "up");
      for (const ns of [a, b]) {
        await ns.ip("-6", "addr", "add", "fd00:61::2/64", "dev", "c0");
        await ns.ip("link", "set", "c0", "up");
      }
      const local = (ns: Netns) =>
        ns.json<Json[]>("-6", "route", "show", "table", "local", "dev", "c0");
      const kinds = async (ns: Netns) =>
        (await local(ns)).map((r) => `${String(r.type)} ${String(r.dst)}`).sort();
      await waitFor(async () => (await kinds(b)).includes("local fd00:61::2"), {
        what: "b's local route of fd00:61::2 (DAD over)",
      });
      expect((await link(a, "c0")).flags).toContain("NO-CARRIER");
      expect(await kinds(b)).toEqual(
        expect.arrayContaining(["multicast ff00::/8", "local fd00:61::2"]),
      );
      // (Whether a gets ff00::/8 depends on the moment it came up: never more than b.)
      expect(await kinds(a)).not.toContain("local fd00:61::2");
    } finally {
      await a.ip("link", "del", "c0");
      await b.ip("link", "del", "c0");
    }
  });
});

describe("what two namespaces configured alike differ in by themselves: addresses, neighbours, sysctls", () => {
  it("addressLifetimes: a lifetime counts down; addressTentative: DAD under way clears by itself", async () => {
    await a.ip(
      "addr",
      "add",
      "fd00:61::2/64",
      "dev",
      "eth0",
      "valid_lft",
      "600",
      "preferred_lft",
      "300",
    );
    const first = (await addrs(a)).find((x) => x.local === "fd00:61::2") as Json;
    expect(first.tentative).toBe(true);
    await waitFor(
      async () => {
        const now = (await addrs(a)).find((x) => x.local === "fd00:61::2") as Json;
        return (
          now.tentative === undefined &&
          (now.valid_life_time as number) < (first.valid_life_time as number)
        );
      },
      { what: "DAD over and the lifetime counted down", timeoutMs: 20_000 },
    );
    // routeExpires: its prefix route expires with it, counting down too.
    const [r] = await a.json<Json[]>("-6", "route", "show", "fd00:61::/64");
    expect(r?.expires).toBeTypeOf("number");
    await a.ip("addr", "del", "fd00:61::2/64", "dev", "eth0");
  });

  it("addressKernelLinkLocal and routeKernelLinkLocal: the kernel's own fe80::/64 from the MAC, and its local route", async () => {
    const ll = (await addrs(a)).find((x) => String(x.local).startsWith("fe80:"));
    expect(ll && isKernelLinkLocal(String(ll.local), Number(ll.prefixlen))).toBe(true);
    // The kernel adds the address's local route once its DAD is over (later under load).
    const local = await waitFor(
      async () => {
        const r = await a.json<Json[]>("-6", "route", "show", "table", "local", String(ll?.local));
        return r.length > 0 && r;
      },
      { what: `the local route of ${ll?.local}`, timeoutMs: 20_000 },
    );
    expect(local[0]?.type).toBe("local");
  });

  it("neighbourKernelMulticast and neighbourLearned: entries the kernel makes from traffic", async () => {
    // One UDP datagram to the peer (bash's /dev/udp): the kernel resolves it and keeps the entry.
    const r = await run("ip", [
      "netns",
      "exec",
      a.name,
      "bash",
      "-c",
      "echo x > /dev/udp/10.61.0.1/9",
    ]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    await waitFor(
      async () =>
        (await a.json<Json[]>("neigh", "show", "nud", "all")).some(
          (n) => n.dst === "10.61.0.1" && (n.state as string[]).some((s) => LEARNED_STATES.has(s)),
        ),
      { what: "a learned entry for the peer" },
    );
    await waitFor(
      async () =>
        (await a.json<Json[]>("-6", "neigh", "show", "nud", "all")).some(
          (n) => isMulticast(String(n.dst)) && (n.state as string[]).includes("NOARP"),
        ),
      {
        what: "a multicast NOARP entry",
        timeoutMs: 20_000,
      },
    );
  });

  it("neighbourNoarpLink: a NOARP link resolves what it sends to as its own MAC", async () => {
    await a.ip("link", "add", "n0", "type", "veth", "peer", "name", "pn0", "netns", wire.name);
    try {
      await a.ip("link", "set", "n0", "arp", "off", "up");
      await a.ip("addr", "add", "10.62.0.2/24", "dev", "n0");
      await wire.ip("link", "set", "pn0", "up");
      const own = String((await link(a, "n0")).address);
      const r = await run("ip", [
        "netns",
        "exec",
        a.name,
        "bash",
        "-c",
        "echo x > /dev/udp/10.62.0.1/9",
      ]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      // Nobody added it: the kernel's entry for the destination, holding n0's own MAC.
      const [n] = await waitFor(
        async () => {
          const e = await a.json<Json[]>("neigh", "show", "nud", "all", "10.62.0.1", "dev", "n0");
          return e.length > 0 && e;
        },
        { what: "the kernel's entry for 10.62.0.1 on n0" },
      );
      expect(n?.state).toEqual(["NOARP"]);
      expect(n?.lladdr).toBe(own);
    } finally {
      await a.ip("link", "del", "n0");
    }
  });

  it("sysctlGlobal: a fresh namespace lacks the initial namespace's global files; sysctlReport: tcp_ehash_entries is negative outside it", async () => {
    const inner = await readNetnsSysctlTree(a.name);
    // This process's own namespace, read (never changed): the machine's initial one.
    const own = (p: string) => {
      try {
        return readFileSync(`/proc/sys/net/${p}`, "utf8").trim();
      } catch {
        return undefined;
      }
    };
    expect(own("core/netdev_max_backlog")).toBeDefined();
    expect(inner.has("core/netdev_max_backlog")).toBe(false);
    expect(Number(inner.get("ipv4/tcp_ehash_entries"))).toBeLessThan(0);
  });
});
