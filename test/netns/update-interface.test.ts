/**
 * UpdateInterface, ListInterfaces and AddARPNeighbors against the real
 * kernel, checked with an independent `ip -n NS -json`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { type Interface, IPFamily } from "../../src/gen/types_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";

interface IpLink {
  ifindex: number;
  ifname: string;
  address: string;
  mtu: number;
  flags: string[];
  addr_info: {
    family: string;
    local: string;
    prefixlen: number;
    scope: string;
    tentative?: boolean;
  }[];
}

const MAC = "02:00:00:00:02:01";
let guest: Netns;
let wire: Netns;
let agent: RunningAgent;
let client: AgentClient;

beforeEach(async () => {
  guest = await Netns.create("nt-if");
  wire = await Netns.create("nt-wire");
  await guest.veth("ens3", "w0", { mac: MAC, peerNs: wire, up: false });
  await guest.veth("ens4", "w1", { mac: "02:00:00:00:02:02", peerNs: wire });
  agent = await guest.startAgent();
  client = await AgentClient.connect(`unix://${agent.socket}`);
});

afterEach(async () => {
  client?.close();
  await agent?.stop();
  await guest?.remove();
  await wire?.remove();
});

type IfaceInit = Partial<Omit<Interface, "$typeName" | "IPAddresses">> & {
  IPAddresses?: { family?: IPFamily; address: string; mask: string }[];
};

function update(iface: IfaceInit, timeoutMs = 10_000) {
  return client.unary(AgentService.method.updateInterface, { interface: iface }, { timeoutMs });
}

async function link(name: string): Promise<IpLink | undefined> {
  const links = await guest.json<IpLink[]>("addr", "show");
  return links.find((l) => l.ifname === name);
}

const addrs = (l: IpLink | undefined) =>
  (l?.addr_info ?? [])
    .filter((a) => a.scope === "global")
    .map((a) => `${a.local}/${a.prefixlen}`)
    .sort();

/**
 * What a request could change, per link: name, MAC, MTU, flags, addresses.
 * Not what the kernel moves on by itself: the DAD state, lifetimes, the
 * carrier (LOWER_UP / NO-CARRIER arrive through linkwatch, up to a second
 * after the peer comes up) and the link-local address it adds with it.
 */
async function linkState() {
  const links = await guest.json<IpLink[]>("addr", "show");
  const carrier = new Set(["LOWER_UP", "NO-CARRIER"]);
  return links.map((l) => ({
    name: l.ifname,
    mac: l.address,
    mtu: l.mtu,
    flags: l.flags.filter((f) => !carrier.has(f)),
    addrs: l.addr_info
      .filter((a) => a.scope !== "link")
      .map((a) => `${a.local}/${a.prefixlen}`)
      .sort(),
  }));
}

async function rejected(p: Promise<unknown>): Promise<TtrpcError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TtrpcError);
  return err as TtrpcError;
}

describe("UpdateInterface", () => {
  it("finds the link by MAC (any case), renames, sets MTU, addresses (IPv6 without DAD) and brings it up", async () => {
    const reply = await update({
      name: "eth0",
      hwAddr: MAC.toUpperCase(),
      mtu: 1400n,
      IPAddresses: [
        { address: "10.248.246.146", mask: "28" },
        { family: IPFamily.v6, address: "fd00::146", mask: "64" },
      ],
    });
    const l = await link("eth0");
    expect(l?.address).toBe(MAC);
    expect(l?.mtu).toBe(1400);
    expect(l?.flags).toContain("UP");
    expect(addrs(l)).toEqual(["10.248.246.146/28", "fd00::146/64"]);
    expect(l?.addr_info.find((a) => a.local === "fd00::146")?.tentative).toBeUndefined();
    expect(await link("ens3")).toBeUndefined();
    // The reply is the link read back: lower-case MAC, true families.
    expect(reply.hwAddr).toBe(MAC);
    expect(reply.name).toBe("eth0");
    expect(reply.mtu).toBe(1400n);
    expect(reply.type).toBe("veth");
    expect(reply.IPAddresses.find((a) => a.address === "fd00::146")?.family).toBe(IPFamily.v6);
    expect(reply.IPAddresses.find((a) => a.address === "10.248.246.146")?.family).toBe(IPFamily.v4);
  });

  it("makes the address set exact: adds missing, removes unrequested global ones, keeps link-local", async () => {
    await guest.ip("link", "set", "ens3", "up");
    await guest.ip("addr", "add", "192.0.2.7/24", "dev", "ens3");
    await guest.ip("addr", "add", "fe80::7/64", "dev", "ens3", "nodad");
    await update({ hwAddr: MAC, IPAddresses: [{ address: "10.0.0.2", mask: "24" }] });
    const l = await link("ens3");
    expect(addrs(l)).toEqual(["10.0.0.2/24"]);
    expect(l?.addr_info.some((a) => a.local === "fe80::7")).toBe(true);
    expect(l?.mtu).toBe(1500); // mtu 0 = unchanged
  });

  it("swaps names when another link holds the wanted one, keeping that link's state", async () => {
    await update({ name: "ens4", hwAddr: MAC });
    const mine = await link("ens4");
    const other = await link("ens3");
    expect(mine?.address).toBe(MAC);
    expect(other?.address).toBe("02:00:00:00:02:02");
    expect(other?.flags).toContain("UP");
  });

  it("sets NOARP from raw_flags and clears it again", async () => {
    await update({ hwAddr: MAC, rawFlags: 0x80 });
    expect((await link("ens3"))?.flags).toContain("NOARP");
    await update({ hwAddr: MAC, rawFlags: 0 });
    expect((await link("ens3"))?.flags).not.toContain("NOARP");
  });

  it("answers NOT_FOUND 'Link not found' for an unknown MAC before the deadline", async () => {
    const started = performance.now();
    // Had the agent overrun the deadline, the client would have failed the
    // call itself with DEADLINE_EXCEEDED, which the Kata runtime never retries.
    const err = await rejected(update({ hwAddr: "02:00:00:00:09:09" }, 4000));
    expect(err.code, err.message).toBe(Code.NOT_FOUND);
    expect(err.message).toMatch(/^Link not found \(hwAddr 02:00:00:00:09:09\)/);
    expect(performance.now() - started).toBeGreaterThan(2000);
  });

  it("waits for a hot-plugged link that appears after the call began", async () => {
    const side = await Netns.create("nt-side");
    try {
      await side.veth("hp0", "hp1", { mac: "02:00:00:00:03:03", up: false });
      const started = performance.now();
      const call = update({ name: "eth1", hwAddr: "02:00:00:00:03:03" }, 10_000);
      // The stimulus, not a readiness wait: the NIC is plugged 300 ms later.
      // not a wait: the stimulus: the NIC is plugged 300 ms after the call began, which the call must wait for
      await new Promise((r) => setTimeout(r, 300));
      await side.ip("link", "set", "hp0", "netns", guest.name);
      const reply = await call;
      expect(performance.now() - started).toBeGreaterThanOrEqual(300);
      expect(reply.name).toBe("eth1");
      expect((await link("eth1"))?.address).toBe("02:00:00:00:03:03");
    } finally {
      await side.remove();
    }
  });
});

describe("UpdateInterface: refusals, IPv4-only guests, a failure part-way, a low MTU", () => {
  it("refuses invalid fields with INVALID_ARGUMENT and changes nothing", async () => {
    const before = await linkState();
    const cases: [IfaceInit, string][] = [
      [{ hwAddr: "02:00:00:00:02" }, "interface.hwAddr"],
      [{ hwAddr: "00:00:00:00:00:00" }, "interface.hwAddr"],
      [{ hwAddr: MAC, name: "eth0\nlink set lo down" }, "interface.name"],
      [{ hwAddr: MAC, name: "-n" }, "interface.name"],
      [{ hwAddr: MAC, name: "sixteen-chars-xx" }, "interface.name"],
      [{ hwAddr: MAC, name: "eth\u00e90" }, "interface.name"],
      [{ hwAddr: MAC, name: "lo" }, "interface.name"],
      [{ hwAddr: MAC, mtu: 67n }, "interface.mtu"],
      [{ hwAddr: MAC, mtu: 70000n }, "interface.mtu"],
      [
        { hwAddr: MAC, IPAddresses: [{ address: "10.0.0.1", mask: "33" }] },
        "interface.IPAddresses[0].mask",
      ],
      [
        { hwAddr: MAC, IPAddresses: [{ address: "1.2.3", mask: "24" }] },
        "interface.IPAddresses[0].address",
      ],
      [
        { hwAddr: MAC, IPAddresses: [{ family: IPFamily.v6, address: "10.0.0.1", mask: "24" }] },
        "interface.IPAddresses[0].family",
      ],
    ];
    for (const [iface, field] of cases) {
      const err = await rejected(update(iface));
      expect(err.code, err.message).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toContain(field);
    }
    expect(await linkState()).toEqual(before);
  });

  it("skips IPv6 addresses when the guest has IPv6 disabled (IPv4-only nodes)", async () => {
    for (const conf of ["all", "default"]) {
      await run("ip", [
        "netns",
        "exec",
        guest.name,
        "sysctl",
        "-qw",
        `net.ipv6.conf.${conf}.disable_ipv6=1`,
      ]);
    }
    await update({
      hwAddr: MAC,
      IPAddresses: [
        { address: "10.0.0.2", mask: "24" },
        { family: IPFamily.v6, address: "fd00::2", mask: "64" },
      ],
    });
    expect(addrs(await link("ens3"))).toEqual(["10.0.0.2/24"]);
  });

  it("a failure part-way puts the link back as it was", async () => {
    // Valid input the kernel refuses late: a macvlan's MTU cannot pass its lower
    // link's (1500), so the MTU fails after the rename. (An MTU below 1280 with an
    // IPv6 address asked for is refused before anything changes: see below.)
    const mv = "02:00:00:00:02:09";
    await guest.ip("link", "add", "mv3", "link", "ens4", "address", mv, "type", "macvlan");
    await guest.ip("link", "set", "mv3", "up");
    await guest.ip("addr", "add", "192.0.2.7/24", "dev", "mv3");
    await guest.ip("addr", "add", "fd00::7/64", "dev", "mv3", "nodad");
    const before = (await linkState()).find((l) => l.name === "mv3");
    const err = await rejected(
      update({
        name: "eth0",
        hwAddr: mv,
        mtu: 9000n,
        IPAddresses: [
          { address: "10.0.0.2", mask: "24" },
          { family: IPFamily.v6, address: "fd00::2", mask: "64" },
        ],
      }),
    );
    expect(err.message).toMatch(/mtu 9000/);
    expect(await link("eth0")).toBeUndefined();
    expect((await linkState()).find((l) => l.name === "mv3")).toEqual(before);
  });

  it("an MTU below 1280 with an IPv6 address asked for: refused before anything changes", async () => {
    await guest.ip("link", "set", "ens3", "up");
    await guest.ip("addr", "add", "192.0.2.7/24", "dev", "ens3");
    const before = await linkState();
    const err = await rejected(
      update({
        name: "eth0",
        hwAddr: MAC,
        mtu: 1000n,
        IPAddresses: [
          { address: "10.0.0.2", mask: "24" },
          { family: IPFamily.v6, address: "fd00::2", mask: "64" },
        ],
      }),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toMatch(/^interface\.mtu: 1000 is below 1280/);
    expect(await linkState()).toEqual(before);
  });
});

describe("ListInterfaces", () => {
  it("lists every link with its real state, lo included, MACs lower-case, families right", async () => {
    await guest.ip("addr", "add", "fd00::5/64", "dev", "ens4", "nodad");
    const { Interfaces } = await client.unary(AgentService.method.listInterfaces, {});
    const names = Interfaces.map((i) => i.name).sort();
    expect(names).toEqual(["ens3", "ens4", "lo"]);
    const ens4 = Interfaces.find((i) => i.name === "ens4");
    expect(ens4?.hwAddr).toBe("02:00:00:00:02:02");
    expect(ens4?.IPAddresses.find((a) => a.address === "fd00::5")).toMatchObject({
      family: IPFamily.v6,
      mask: "64",
    });
    const lo = Interfaces.find((i) => i.name === "lo");
    expect(lo?.IPAddresses.find((a) => a.address === "127.0.0.1")).toMatchObject({
      family: IPFamily.v4,
      mask: "8",
    });
  });
});

describe("AddARPNeighbors", () => {
  it("replaces entries, state 0 = permanent, router flag honoured, multicast skipped", async () => {
    const add = (neighbors: object[]) =>
      client.unary(AgentService.method.addARPNeighbors, { neighbors: { ARPNeighbors: neighbors } });
    await add([
      {
        toIPAddress: { address: "192.0.2.1" },
        device: "ens4",
        lladdr: "02:AA:00:00:00:01",
        state: 0,
      },
      {
        toIPAddress: { family: IPFamily.v6, address: "fd00::1" },
        device: "ens4",
        lladdr: "02:aa:00:00:00:02",
        state: 0x80,
        flags: 0x80,
      },
      {
        toIPAddress: { address: "224.0.0.5" },
        device: "ens4",
        lladdr: "01:00:5e:00:00:05",
        state: 0,
      },
    ]);
    // Again, with a new MAC: replace, not "File exists".
    await add([
      {
        toIPAddress: { address: "192.0.2.1" },
        device: "ens4",
        lladdr: "02:aa:00:00:00:09",
        state: 0,
      },
    ]);
    const neigh = await guest.json<
      { dst: string; lladdr: string; state: string[]; router?: null }[]
    >("neigh", "show");
    const v4 = neigh.find((n) => n.dst === "192.0.2.1");
    expect(v4).toMatchObject({ lladdr: "02:aa:00:00:00:09", state: ["PERMANENT"] });
    const v6 = neigh.find((n) => n.dst === "fd00::1");
    expect(v6?.state).toEqual(["PERMANENT"]);
    expect(v6 && "router" in v6).toBe(true);
    expect(neigh.some((n) => n.dst === "224.0.0.5")).toBe(false);
  });

  it("refuses an empty lladdr for a permanent entry and changes nothing", async () => {
    const err = await rejected(
      client.unary(AgentService.method.addARPNeighbors, {
        neighbors: {
          ARPNeighbors: [{ toIPAddress: { address: "192.0.2.1" }, device: "ens4", state: 0 }],
        },
      }),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toContain("neighbors[0].lladdr");
    expect(await guest.json("neigh", "show")).toEqual([]);
  });
});
